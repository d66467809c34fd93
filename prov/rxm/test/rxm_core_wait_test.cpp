// CoreWaitFds (prov/rxm/rxm_core_wait.h): what the last sleeper saw of a core object's fd.
// rxm's progress reads the core EQ after a sleep unless the sleeper reported the EQ's whole
// FI_GETWAIT fd quiet (verbs: an empty EQ read is a failed rdma_get_cm_event per wake-up).
// A stale or missing report must never say quiet: the EQ event that woke the sleeper would
// then wait for the idle interval's read.
#include "prov/rxm/rxm_core_wait.h"
#include "prov/util/sleep_report.h"

#include <gtest/gtest.h>

#include <rdma/fi_eq.h>

namespace {

// A core object answering FI_GETWAIT (a foreign core, or verbs) or kGetWaitSources (a
// core of ours with engine sources) with fds that are only numbers here.
struct FakeCore {
	struct fid fid {};
	struct fi_ops ops {};
	bool sources = false;
	int fds[2] = {9001, 9002};
};

int fake_control(struct fid *fid, int command, void *arg)
{
	auto *core = reinterpret_cast<FakeCore *>(fid);
	if (command == util::kGetWaitSources) {
		if (!core->sources)
			return -FI_ENOSYS;
		auto *out = static_cast<util::WaitSources *>(arg);
		out->count = 2;
		out->fds[0] = core->fds[0];
		out->fds[1] = core->fds[1];
		return 0;
	}
	if (command == FI_GETWAIT) {
		*static_cast<int *>(arg) = core->fds[0];
		return 0;
	}
	return -FI_ENOSYS;
}

void init(FakeCore &core, bool sources)
{
	core.ops.size = sizeof(core.ops);
	core.ops.control = fake_control;
	core.fid.fclass = FI_CLASS_EQ;
	core.fid.ops = &core.ops;
	core.sources = sources;
}

TEST(RxmCoreWait, WholeWaitFdSeenQuietOnlyByTheSleepAfterForget)
{
	FakeCore core;
	init(core, false);
	rxm::CoreWaitFds wait;
	ASSERT_TRUE(wait.fetch(&core.fid));
	ASSERT_EQ(wait.count(), 1u);

	// A report left by an earlier sleep does not count for the next one.
	util::sleep_report::note(core.fds[0], false);
	wait.forget_sleep();
	EXPECT_FALSE(wait.seen_quiet()); // nobody reported this sleep (an app's own poll)

	util::sleep_report::note(core.fds[0], false);
	EXPECT_TRUE(wait.seen_quiet()); // the sleeper woke with the EQ's fd not readable

	wait.forget_sleep();
	util::sleep_report::note(core.fds[0], true);
	EXPECT_FALSE(wait.seen_quiet()); // the EQ's fd woke it: read the EQ
}

TEST(RxmCoreWait, WaitSourcesAreNeverSeenQuiet)
{
	// A core of ours gives parts of its wait (eventfd, engine fds another object may feed):
	// quiet parts do not make the object quiet.
	FakeCore core;
	init(core, true);
	rxm::CoreWaitFds wait;
	ASSERT_TRUE(wait.fetch(&core.fid));
	ASSERT_EQ(wait.count(), 2u);
	wait.forget_sleep();
	util::sleep_report::note(core.fds[0], false);
	util::sleep_report::note(core.fds[1], false);
	EXPECT_FALSE(wait.seen_quiet());
	util::sleep_report::take(core.fds[0]);
	util::sleep_report::take(core.fds[1]);
}

TEST(RxmCoreWait, ClearedFdsAreNeverSeenQuiet)
{
	FakeCore core;
	init(core, false);
	rxm::CoreWaitFds wait;
	ASSERT_TRUE(wait.fetch(&core.fid));
	wait.clear();
	util::sleep_report::note(core.fds[0], false);
	EXPECT_FALSE(wait.seen_quiet());
	util::sleep_report::take(core.fds[0]);
}

} // namespace
