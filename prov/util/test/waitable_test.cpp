// util::Waitable's hooks for layered providers: polled fds, before_sleep, fd-less sources,
// wait sources.
#include "prov/util/waitable.h"
#include "prov/util/test/epoll_levels.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <vector>
#include <chrono>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>

namespace {

using Clock = std::chrono::steady_clock;

class TestWaitable : public util::Waitable {
public:
	void run_progress() override {}
	bool has_events() override { return false; }
	bool before_sleep() override
	{
		before_sleep_calls.fetch_add(1);
		return !veto_sleep.load();
	}

	// One sleep as a blocking read does it: registered as a waiter.
	int block(int timeout_ms) { return block_to(deadline_after(timeout_ms), timeout_ms < 0); }
	int block_to(Clock::time_point deadline, bool infinite)
	{
		begin_wait();
		int rc = block_until(deadline, infinite);
		end_wait();
		return rc;
	}

	std::atomic<int> before_sleep_calls{0};
	std::atomic<bool> veto_sleep{false};
};

// An eventfd standing for a core CQ's wait fd.
class EventFd {
public:
	EventFd() : fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
	~EventFd() { ::close(fd_); }
	int fd() const { return fd_; }
	void set()
	{
		uint64_t one = 1;
		ASSERT_EQ(::write(fd_, &one, sizeof one), static_cast<ssize_t>(sizeof one));
	}
	void clear()
	{
		uint64_t value;
		ASSERT_EQ(::read(fd_, &value, sizeof value), static_cast<ssize_t>(sizeof value));
	}

private:
	int fd_;
};

bool readable(int fd)
{
	pollfd p{fd, POLLIN, 0};
	return ::poll(&p, 1, 0) == 1;
}

long elapsed_ms(Clock::time_point since)
{
	return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - since).count();
}

TEST(Waitable, PolledFdWakesASleeperWithoutJoiningTheEpollSet)
{
	TestWaitable w;
	EventFd core;
	ASSERT_EQ(w.add_polled_fd(core.fd()), 0);
	EXPECT_EQ(w.polled_fd_count(), 1u);

	auto start = Clock::now();
	EXPECT_EQ(w.block(30), -FI_EAGAIN);  // nothing ready: the whole timeout
	EXPECT_GE(elapsed_ms(start), 30);

	core.set();
	EXPECT_FALSE(readable(w.wait_fd()));  // not nested in the epoll set...
	start = Clock::now();
	EXPECT_EQ(w.block(5000), 0);           // ...yet it wakes the sleeper
	EXPECT_LT(elapsed_ms(start), 1000);

	// Set while the reader sleeps.
	core.clear();
	std::thread waker([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(30));
		core.set();
	});
	start = Clock::now();
	EXPECT_EQ(w.block(5000), 0);
	EXPECT_LT(elapsed_ms(start), 1000);
	waker.join();

	w.remove_polled_fd(core.fd());
	EXPECT_EQ(w.polled_fd_count(), 0u);
	EXPECT_EQ(w.block(20), -FI_EAGAIN);  // still set, but no longer ours
}

TEST(Waitable, ManyPolledFdsAreAllWatched)
{
	TestWaitable w;
	std::vector<std::unique_ptr<EventFd>> cores;
	for (int i = 0; i < 40; ++i) {  // past the small in-place array
		cores.push_back(std::make_unique<EventFd>());
		ASSERT_EQ(w.add_polled_fd(cores.back()->fd()), 0);
	}
	EXPECT_EQ(w.block(10), -FI_EAGAIN);
	cores.back()->set();
	EXPECT_EQ(w.block(5000), 0);
}

TEST(Waitable, ExportingTheFdPutsPolledFdsIntoTheEpollSet)
{
	TestWaitable w;
	EventFd before, after;
	ASSERT_EQ(w.add_polled_fd(before.fd()), 0);
	ASSERT_EQ(w.add_polled_fd(before.fd()), 0);  // twice, e.g. bound as TX and RX
	int fd = -1;
	ASSERT_EQ(w.wait_control(FI_GETWAIT, &fd, FI_WAIT_FD), 0);
	EXPECT_EQ(fd, w.wait_fd());

	before.set();
	EXPECT_TRUE(readable(fd));  // readable by itself: the application polls it alone
	w.remove_polled_fd(before.fd());
	EXPECT_TRUE(readable(fd));  // still added once
	w.remove_polled_fd(before.fd());
	EXPECT_FALSE(readable(fd));

	ASSERT_EQ(w.add_polled_fd(after.fd()), 0);  // added after the export
	after.set();
	EXPECT_TRUE(readable(fd));
	EXPECT_EQ(w.block(5000), 0);
}

TEST(Waitable, ExportedFdNestsInTwoMoreEpollLevels)
{
	// The application may put the exported fd in its epoll set, itself in another: the
	// polled fds sit at the same depth as the engine fd, not one deeper.
	TestWaitable w;
	EventFd core;
	ASSERT_EQ(w.add_polled_fd(core.fd()), 0);
	int fd = -1;
	ASSERT_EQ(w.wait_control(FI_GETWAIT, &fd, FI_WAIT_FD), 0);
	int level1 = epoll_create1(EPOLL_CLOEXEC);
	int level2 = epoll_create1(EPOLL_CLOEXEC);
	epoll_event ev{};
	ev.events = EPOLLIN;
	ASSERT_EQ(epoll_ctl(level1, EPOLL_CTL_ADD, fd, &ev), 0);
	ASSERT_EQ(epoll_ctl(level2, EPOLL_CTL_ADD, level1, &ev), 0);
	EXPECT_FALSE(readable(level2));
	core.set();
	EXPECT_EQ(epoll_wait(level2, &ev, 1, 5000), 1);
	::close(level2);
	::close(level1);
}

TEST(Waitable, PolledFdArgumentsAreChecked)
{
	TestWaitable w;
	EXPECT_EQ(w.add_polled_fd(-1), -FI_EINVAL);
	w.remove_polled_fd(12345);  // never added: nothing happens
	EXPECT_EQ(w.polled_fd_count(), 0u);
}

TEST(Waitable, BeforeSleepRunsBeforeEachSleepAndCanVetoIt)
{
	TestWaitable w;
	w.veto_sleep = true;
	auto start = Clock::now();
	EXPECT_EQ(w.block(5000), 0);  // "re-check" at once
	EXPECT_LT(elapsed_ms(start), 1000);
	EXPECT_EQ(w.before_sleep_calls.load(), 1);

	w.veto_sleep = false;
	start = Clock::now();
	EXPECT_EQ(w.block(20), -FI_EAGAIN);
	EXPECT_GE(elapsed_ms(start), 20);
	EXPECT_EQ(w.before_sleep_calls.load(), 2);

	// An interrupt wins over the hook: the reader returns without asking it.
	w.interrupt();
	EXPECT_EQ(w.block(5000), -FI_EAGAIN);
	EXPECT_EQ(w.before_sleep_calls.load(), 2);
}

TEST(Waitable, FdlessSourceWakesTheSleeperEveryTick)
{
	TestWaitable w;
	w.add_fdless_source();
	// Forever, yet back within a few ticks to look at the source.
	auto start = Clock::now();
	EXPECT_EQ(w.block(-1), 0);
	EXPECT_LT(elapsed_ms(start), 500);

	// A 30 ms timeout is served in ticks: "re-check" until the deadline passed.
	start = Clock::now();
	auto deadline = start + std::chrono::milliseconds(30);
	int ticks = 0;
	while (w.block_to(deadline, false) == 0 && ticks < 10000)
		++ticks;
	EXPECT_GE(ticks, 5);
	EXPECT_LE(ticks, 40);  // slept between ticks
	EXPECT_GE(elapsed_ms(start), 30);

	w.remove_fdless_source();
	start = Clock::now();
	EXPECT_EQ(w.block(30), -FI_EAGAIN);  // one sleep for the whole timeout again
	EXPECT_GE(elapsed_ms(start), 30);
}

TEST(Waitable, FdlessTickSleepsInsteadOfSpinning)
{
	TestWaitable w;
	w.add_fdless_source();
	auto start = Clock::now();
	int wakeups = 0;
	while (elapsed_ms(start) < 50)
		if (w.block(-1) == 0)
			++wakeups;
	// About one per millisecond; a spinning loop would make thousands.
	EXPECT_LE(wakeups, 60);
	EXPECT_GE(wakeups, 5);
	w.remove_fdless_source();
}


// ---- wait sources (kGetWaitSources): what a layered provider watches instead of our fd ----

class EventWaitable : public util::Waitable {
public:
	void run_progress() override {}
	bool has_events() override { return events.load(); }
	void add_event()
	{
		events = true;
		note_event_added();
	}
	void drain()
	{
		note_read();
		events = false;
		note_drained();
	}
	std::atomic<bool> events{false};
};

TEST(WaitSources, ListTheEventfdAndEngineAndAreWrittenOnlyOnceArmedByTrywait)
{
	util::ProgressEngine engine;
	EventWaitable w;
	ASSERT_EQ(w.add_wait_source(engine), 0);
	util::WaitSources sources;
	ASSERT_EQ(w.wait_control(util::kGetWaitSources, &sources, FI_WAIT_FD), 0);
	ASSERT_EQ(sources.count, 2u);
	EXPECT_EQ(sources.fds[1], engine.fd());  // a domain's engine nests nothing: as it is
	int event_fd = sources.fds[0];
	EXPECT_NE(event_fd, w.wait_fd());
	// The holder promised fi_trywait: while it is busy reading, events cost no write.
	w.add_event();
	EXPECT_FALSE(readable(event_fd));
	EXPECT_EQ(w.trywait(), -FI_EAGAIN);  // and trywait tells it instead
	w.drain();
	ASSERT_EQ(w.trywait(), 0);  // armed: the next event must wake the sleeping holder
	EXPECT_FALSE(readable(event_fd));
	w.add_event();
	EXPECT_TRUE(readable(event_fd));
	w.drain();
	EXPECT_FALSE(readable(event_fd));
	// Sources are fixed once handed out.
	EXPECT_EQ(w.add_wait_source(engine.fd()), -FI_EBUSY);
}

TEST(WaitSources, RefusedWhenTheObjectNeedsItsOwnSleepOrHasNoWaitObject)
{
	EventFd core;
	EventWaitable layered;
	ASSERT_EQ(layered.add_polled_fd(core.fd()), 0);
	util::WaitSources sources;
	EXPECT_EQ(layered.wait_control(util::kGetWaitSources, &sources, FI_WAIT_FD), -FI_ENOSYS);
	EventWaitable fdless;
	fdless.add_fdless_source();
	EXPECT_EQ(fdless.wait_control(util::kGetWaitSources, &sources, FI_WAIT_FD), -FI_ENOSYS);
	EventWaitable none;
	EXPECT_EQ(none.wait_control(util::kGetWaitSources, &sources, FI_WAIT_NONE), -FI_ENOSYS);
	EXPECT_EQ(none.wait_control(util::kGetWaitSources, nullptr, FI_WAIT_FD), -FI_EINVAL);
}

TEST(WaitSources, AFabricEngineGivesItsLeafSetWithoutTheNestedEngines)
{
	util::ProgressEngine fabric, domain;
	EventFd own_fd, domain_fd, late_fd;
	ASSERT_EQ(domain.add_fd(domain_fd.fd(), EPOLLIN, nullptr), 0);
	ASSERT_EQ(fabric.add_fd(own_fd.fd(), EPOLLIN, nullptr), 0);
	ASSERT_EQ(fabric.add_nested_engine(domain.fd(), nullptr), 0);
	EventWaitable eq;
	ASSERT_EQ(eq.add_wait_source(fabric), 0);
	util::WaitSources sources;
	ASSERT_EQ(eq.wait_control(util::kGetWaitSources, &sources, FI_WAIT_UNSPEC), 0);
	ASSERT_EQ(sources.count, 2u);
	int leaf = sources.fds[1];
	EXPECT_EQ(leaf, fabric.leaf_fd());
	EXPECT_NE(leaf, fabric.fd());
	// One epoll level less under the leaf set than under the engine's own set.
	EXPECT_EQ(levels_accepted(leaf), levels_accepted(fabric.fd()) + 1);
	domain_fd.set();
	EXPECT_TRUE(readable(fabric.fd()));
	EXPECT_FALSE(readable(leaf));  // the holder watches the domain by other means
	domain_fd.clear();
	own_fd.set();
	EXPECT_TRUE(readable(leaf));
	own_fd.clear();
	// Kept in step with later registrations.
	ASSERT_EQ(fabric.add_fd(late_fd.fd(), EPOLLIN, nullptr), 0);
	late_fd.set();
	EXPECT_TRUE(readable(leaf));
	ASSERT_EQ(fabric.remove_fd(late_fd.fd()), 0);
	EXPECT_FALSE(readable(leaf));
	ASSERT_EQ(fabric.remove_fd(domain.fd()), 0);
	EXPECT_FALSE(fabric.has_nested_engines());
}

} // namespace
