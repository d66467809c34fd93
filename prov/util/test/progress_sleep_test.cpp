// Progress engine, the step before sleeping: lazy fds are skipped by busy passes but never
// by a sleeper, and sources arm their wake-ups in prepare_sleep() (blocked readers,
// fi_trywait and the auto-progress thread), which may veto the sleep; what a blocked reader
// saw of the engine (sleep_report.h) spares it the epoll_wait probes.
#include "prov/util/progress_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <thread>
#include <unistd.h>

namespace {

using namespace std::chrono_literals;

// A source that learns of work through memory, with an eventfd doorbell that the "peer"
// writes only when asked (armed), as a shared-memory ring does.
struct MemorySource : util::ProgressSource, util::FdHandler {
	MemorySource() : bell(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {}
	~MemorySource() override { ::close(bell); }
	void progress() override
	{
		passes++;
		if (work.load())
			seen = true;
	}
	bool before_sleep() override
	{
		armed = true;
		return !work.load(); // veto when work came meanwhile
	}
	void on_fd_ready(int, uint32_t) override
	{
		dispatched++;
		uint64_t value;
		[[maybe_unused]] ssize_t n = ::read(bell, &value, sizeof(value));
	}
	// What the peer does: publish, then ring only if asked.
	void produce()
	{
		work = true;
		uint64_t one = 1;
		if (armed.exchange(false)) {
			ASSERT_EQ(::write(bell, &one, sizeof(one)), 8);
		}
	}
	void ring()
	{
		uint64_t one = 1;
		ASSERT_EQ(::write(bell, &one, sizeof(one)), 8);
	}
	int bell;
	std::atomic<bool> armed{false}, work{false}, seen{false};
	std::atomic<int> passes{0}, dispatched{0};
};

template <class Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds limit = 5000ms)
{
	auto end = std::chrono::steady_clock::now() + limit;
	while (!predicate()) {
		if (std::chrono::steady_clock::now() > end)
			return false;
		std::this_thread::sleep_for(1ms);
	}
	return true;
}

TEST(ProgressSleep, LazyFdsWaitForEveryFewPassesARequestOrASleeper)
{
	util::ProgressEngine engine;
	MemorySource source;
	ASSERT_EQ(engine.add_fd(source.bell, EPOLLIN, &source), 0);
	ASSERT_EQ(engine.set_lazy(source.bell, true), 0);
	EXPECT_EQ(engine.set_lazy(source.bell + 1000, true), -FI_ENOENT);

	source.ring();
	for (unsigned i = 0; i + 1 < util::ProgressEngine::kLazyEpollEvery; ++i)
		engine.progress();
	EXPECT_EQ(source.dispatched.load(), 0) << "a busy pass asked epoll for a lazy fd";
	engine.progress();
	EXPECT_EQ(source.dispatched.load(), 1) << "a lazy fd must be seen within the bound";

	source.ring();
	engine.request_epoll();
	engine.progress();
	EXPECT_EQ(source.dispatched.load(), 2);

	// A sleeper never sleeps on a ready fd: it is dispatched, and the sleep vetoed.
	source.ring();
	EXPECT_FALSE(engine.prepare_sleep());
	EXPECT_EQ(source.dispatched.load(), 3);
	EXPECT_TRUE(engine.prepare_sleep()); // drained, no source: sleep

	// Eager again: every pass looks.
	ASSERT_EQ(engine.set_lazy(source.bell, false), 0);
	source.ring();
	engine.progress();
	EXPECT_EQ(source.dispatched.load(), 4);
	EXPECT_EQ(engine.remove_fd(source.bell), 0);
}

TEST(ProgressSleep, SourcesArmBeforeSleepingAndMayVeto)
{
	util::ProgressEngine engine;
	MemorySource source;
	ASSERT_EQ(engine.add_fd(source.bell, EPOLLIN, &source), 0);
	ASSERT_EQ(engine.add_source(&source), 0);
	engine.progress();
	EXPECT_FALSE(source.armed.load()) << "a busy pass must not arm";
	EXPECT_TRUE(engine.prepare_sleep());
	EXPECT_TRUE(source.armed.load());
	source.work = true;
	EXPECT_FALSE(engine.prepare_sleep()) << "the source's veto must reach the sleeper";
	engine.remove_source(&source);
	EXPECT_EQ(engine.remove_fd(source.bell), 0);
}

// The auto-progress thread arms its sources before each sleep, so work published after it
// fell asleep wakes it through the doorbell, long before its (here 10 s) interval.
TEST(ProgressSleep, AutoThreadWakesForWorkPublishedWhileAsleep)
{
	util::ProgressEngine engine;
	MemorySource source;
	ASSERT_EQ(engine.add_fd(source.bell, EPOLLIN, &source), 0);
	ASSERT_EQ(engine.set_lazy(source.bell, true), 0);
	ASSERT_EQ(engine.add_source(&source), 0);
	ASSERT_EQ(engine.start_thread(10000), 0);
	ASSERT_TRUE(eventually([&] { return source.armed.load(); }))
		<< "the thread slept without arming its sources";
	std::this_thread::sleep_for(50ms);
	int passes_asleep = source.passes.load();
	auto start = std::chrono::steady_clock::now();
	source.produce();
	EXPECT_TRUE(eventually([&] { return source.seen.load(); }));
	EXPECT_LT(std::chrono::steady_clock::now() - start, 2000ms);
	EXPECT_LE(passes_asleep, 2) << "the thread spun instead of sleeping";
	engine.stop_thread();
	engine.remove_source(&source);
	EXPECT_EQ(engine.remove_fd(source.bell), 0);
}

// What a blocked reader saw (sleep_report.h) spares prepare_sleep() its epoll_wait: a quiet
// report, or a fired one that a source explained by draining its own fd; not a fired one,
// and not twice for one report.
TEST(ProgressSleep, SleeperReportsSpareTheProbe)
{
	util::ProgressEngine engine;
	MemorySource source;
	ASSERT_EQ(engine.add_fd(source.bell, EPOLLIN, &source), 0);
	ASSERT_EQ(engine.set_lazy(source.bell, true), 0);
	ASSERT_EQ(engine.add_source(&source), 0);
	engine.progress(); // lazy: asks no epoll, so the engine is not known quiet
	source.ring();
	util::sleep_report::note(engine.fd(), false);
	EXPECT_TRUE(engine.prepare_sleep());
	EXPECT_EQ(source.dispatched.load(), 0) << "probed although the sleeper saw the fd quiet";
	// Used: the next sleep (nobody reported) probes, and dispatches the doorbell.
	EXPECT_FALSE(engine.prepare_sleep());
	EXPECT_EQ(source.dispatched.load(), 1);
	engine.progress();
	// Fired, and the source drained what fired itself: no probe.
	source.ring();
	util::sleep_report::note(engine.fd(), true);
	uint64_t value;
	ASSERT_EQ(::read(source.bell, &value, sizeof(value)), 8);
	engine.note_drained_by_source();
	EXPECT_TRUE(engine.prepare_sleep());
	EXPECT_EQ(source.dispatched.load(), 1);
	// Fired, nothing explained it: probe.
	engine.progress();
	source.ring();
	util::sleep_report::note(engine.fd(), true);
	EXPECT_FALSE(engine.prepare_sleep());
	EXPECT_EQ(source.dispatched.load(), 2);
	engine.remove_source(&source);
	EXPECT_EQ(engine.remove_fd(source.bell), 0);
}

// An engine holding others (a fabric's) skips the epoll_wait of one pass when the last
// sleeper saw its own fds (leaf_fd) and every nested engine quiet; a ready fd is then
// dispatched by the next pass. Any nested engine seen fired: epoll is asked at once.
TEST(ProgressSleep, NestingEngineSkipsOnePassWhenSleepersSawAllQuiet)
{
	struct Counting : util::FdHandler {
		void on_fd_ready(int fd, uint32_t) override
		{
			calls++;
			uint64_t value;
			[[maybe_unused]] ssize_t n = ::read(fd, &value, sizeof(value));
		}
		int calls = 0;
	} listener, nested;
	util::ProgressEngine outer, inner;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ASSERT_GE(fd, 0);
	ASSERT_EQ(outer.add_fd(fd, EPOLLIN, &listener), 0);
	ASSERT_EQ(outer.add_nested_engine(inner.fd(), &nested), 0);
	int leaf = outer.leaf_fd();
	ASSERT_GE(leaf, 0);
	uint64_t one = 1;
	ASSERT_EQ(::write(fd, &one, sizeof(one)), 8);
	util::sleep_report::note(leaf, false);
	util::sleep_report::note(inner.fd(), false);
	outer.progress();
	EXPECT_EQ(listener.calls, 0) << "asked epoll although the sleeper saw everything quiet";
	outer.progress();
	EXPECT_EQ(listener.calls, 1) << "the report was used twice";
	ASSERT_EQ(::write(fd, &one, sizeof(one)), 8);
	util::sleep_report::note(leaf, false);
	util::sleep_report::note(inner.fd(), true);
	outer.progress();
	EXPECT_EQ(listener.calls, 2) << "skipped epoll although a nested engine was seen fired";
	EXPECT_EQ(outer.remove_fd(inner.fd()), 0);
	EXPECT_EQ(outer.remove_fd(fd), 0);
	::close(fd);
}

} // namespace
