// Wait sets and poll sets.
#include "prov/util/test/fake_provider.h"

#include <chrono>
#include <poll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>

namespace {

using fake::Fixture;

TEST_F(Fixture, WaitSetWakesForAnyMember)
{
	struct fi_wait_attr wait_attr{};
	wait_attr.wait_obj = FI_WAIT_UNSPEC;
	struct fid_wait *waitset;
	ASSERT_EQ(fi_wait_open(fabric, &wait_attr, &waitset), 0);
	struct fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_CONTEXT;
	cq_attr.wait_obj = FI_WAIT_SET;
	cq_attr.wait_set = waitset;
	struct fid_cq *cq;
	ASSERT_EQ(fi_cq_open(domain, &cq_attr, &cq, nullptr), 0);
	EXPECT_EQ(fi_close(&waitset->fid), -FI_EBUSY);

	EXPECT_EQ(fi_wait(waitset, 20), -FI_ETIMEDOUT);
	auto *object = util::fid_cast<util::CompletionQueue>(&cq->fid, FI_CLASS_CQ);
	std::thread writer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		util::LockGuard guard(domain_object->lock());
		object->write(nullptr, FI_SEND);
	});
	EXPECT_EQ(fi_wait(waitset, 5000), 0);
	writer.join();
	struct fi_cq_entry entry;
	EXPECT_EQ(fi_cq_read(cq, &entry, 1), 1);
	struct fid *fids[] = {&waitset->fid};
	EXPECT_EQ(fi_trywait(fabric, fids, 1), 0);
	EXPECT_EQ(fi_cq_sread(cq, &entry, 1, nullptr, 0), -FI_ENOSYS);  // invalid with a set

	EXPECT_EQ(fi_close(&cq->fid), 0);
	EXPECT_EQ(fi_close(&waitset->fid), 0);
}

TEST_F(Fixture, WaitSetWatchesItsMembersPolledFds)
{
	// A wait set sleeps on its members' epoll fds alone, so joining one puts a member's
	// polled fds (a layered provider's core fds) into its epoll set.
	struct fi_wait_attr wait_attr{};
	wait_attr.wait_obj = FI_WAIT_FD;
	struct fid_wait *waitset;
	ASSERT_EQ(fi_wait_open(fabric, &wait_attr, &waitset), 0);
	struct fi_cq_attr cq_attr{};
	cq_attr.wait_obj = FI_WAIT_SET;
	cq_attr.wait_set = waitset;
	struct fid_cq *cq;
	ASSERT_EQ(fi_cq_open(domain, &cq_attr, &cq, nullptr), 0);
	auto *object = util::fid_cast<util::CompletionQueue>(&cq->fid, FI_CLASS_CQ);
	int core = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ASSERT_EQ(object->add_polled_fd(core), 0);
	int fd = -1;
	ASSERT_EQ(fi_control(&waitset->fid, FI_GETWAIT, &fd), 0);
	pollfd p{fd, POLLIN, 0};
	EXPECT_EQ(poll(&p, 1, 0), 0);
	uint64_t one = 1;
	ASSERT_EQ(write(core, &one, sizeof one), static_cast<ssize_t>(sizeof one));
	EXPECT_EQ(poll(&p, 1, 5000), 1);
	object->remove_polled_fd(core);
	EXPECT_EQ(poll(&p, 1, 0), 0);
	close(core);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	EXPECT_EQ(fi_close(&waitset->fid), 0);
}

TEST_F(Fixture, PollSetReportsReadyMembers)
{
	struct fi_poll_attr poll_attr{};
	struct fid_poll *pollset;
	ASSERT_EQ(fi_poll_open(domain, &poll_attr, &pollset), 0);
	struct fid_cq *cq = open_cq(FI_CQ_FORMAT_CONTEXT);  // context: the fixture
	struct fi_cntr_attr cntr_attr{};
	struct fid_cntr *cntr;
	int cntr_context;
	ASSERT_EQ(fi_cntr_open(domain, &cntr_attr, &cntr, &cntr_context), 0);
	ASSERT_EQ(fi_poll_add(pollset, &cq->fid, 0), 0);
	ASSERT_EQ(fi_poll_add(pollset, &cntr->fid, 0), 0);
	EXPECT_EQ(fi_poll_add(pollset, &cq->fid, 0), -FI_EALREADY);
	EXPECT_EQ(fi_poll_add(pollset, &domain->fid, 0), -FI_EINVAL);

	void *contexts[4];
	EXPECT_EQ(fi_poll(pollset, contexts, 4), 0);
	util::fid_cast<util::CompletionQueue>(&cq->fid)->write(nullptr, FI_SEND);
	fi_cntr_add(cntr, 1);
	ASSERT_EQ(fi_poll(pollset, contexts, 4), 2);
	EXPECT_EQ(contexts[0], static_cast<void *>(this));
	EXPECT_EQ(contexts[1], static_cast<void *>(&cntr_context));
	ASSERT_EQ(fi_poll(pollset, contexts, 4), 1);  // the counter is reported once per change

	EXPECT_EQ(fi_close(&cq->fid), -FI_EBUSY);
	EXPECT_EQ(fi_poll_del(pollset, &cq->fid, 0), 0);
	EXPECT_EQ(fi_poll_del(pollset, &cq->fid, 0), -FI_EINVAL);
	EXPECT_EQ(fi_close(&cq->fid), 0);
	EXPECT_EQ(fi_close(&pollset->fid), 0);
	EXPECT_EQ(fi_close(&cntr->fid), 0);
}

} // namespace
