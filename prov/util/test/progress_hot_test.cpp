// Progress engine, busy-polling shortcut: an fd epoll reported readable is tried directly
// (poll_fd) on later passes instead of epoll_wait, while every other fd is still dispatched
// within kEpollEvery passes, two passes after one where the hot fd had data (the pass in
// between rests: no read, no epoll_wait), and handlers that decline or readers that are
// paused are never tried behind epoll's back.
#include "prov/util/progress_engine.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fcntl.h>
#include <functional>
#include <memory>
#include <poll.h>
#include <stdexcept>
#include <sys/epoll.h>
#include <unistd.h>
#include <vector>

namespace {

using util::FdHandler;
using util::ProgressEngine;

// A pipe whose reader counts how it was driven: by epoll (on_fd_ready) or directly.
class PipeReader : public FdHandler {
public:
	explicit PipeReader(bool pollable) : pollable_(pollable)
	{
		if (pipe2(fds_, O_NONBLOCK))
			throw std::runtime_error("pipe");
	}
	~PipeReader() override
	{
		::close(fds_[0]);
		::close(fds_[1]);
	}
	void on_fd_ready(int, uint32_t) override
	{
		++ready_calls;
		drain();
	}
	Poll poll_fd(int) override
	{
		if (!pollable_)
			return Poll::declined;
		++poll_calls;
		if (on_poll)
			on_poll();
		return drain() ? Poll::busy : Poll::idle;
	}
	void poke() { ASSERT_EQ(::write(fds_[1], "x", 1), 1); }
	int fd() const { return fds_[0]; }
	int ready_calls = 0, poll_calls = 0, bytes = 0;
	std::function<void()> on_poll;

private:
	bool drain()
	{
		char buf[64];
		ssize_t n, got = 0;
		while ((n = ::read(fds_[0], buf, sizeof(buf))) > 0)
			got += n;
		bytes += static_cast<int>(got);
		return got > 0;
	}
	bool pollable_;
	int fds_[2];
};

TEST(ProgressHot, ReadableFdIsPolledDirectlyAfterEpollReportedIt)
{
	ProgressEngine engine;
	PipeReader hot(true);
	ASSERT_EQ(engine.add_fd(hot.fd(), EPOLLIN, &hot), 0);
	engine.progress();
	EXPECT_EQ(hot.ready_calls + hot.poll_calls, 0); // not hot before epoll saw data
	hot.poke();
	engine.progress();
	EXPECT_EQ(hot.ready_calls, 1);
	EXPECT_EQ(hot.bytes, 1);
	// From now on passes try it directly; a byte is read by poll_fd, not via epoll.
	hot.poke();
	engine.progress();
	EXPECT_EQ(hot.poll_calls, 1);
	EXPECT_EQ(hot.bytes, 2);
	EXPECT_EQ(hot.ready_calls, 1);
	EXPECT_EQ(engine.remove_fd(hot.fd()), 0);
	engine.progress();
	EXPECT_EQ(hot.poll_calls, 1); // removed: cooled
}

TEST(ProgressHot, OtherFdsAreStillServedWhileOneIsHot)
{
	ProgressEngine engine;
	PipeReader hot(true), other(false);
	ASSERT_EQ(engine.add_fd(hot.fd(), EPOLLIN, &hot), 0);
	ASSERT_EQ(engine.add_fd(other.fd(), EPOLLIN, &other), 0);
	hot.poke();
	engine.progress();
	ASSERT_EQ(hot.ready_calls, 1);

	// Hot fd idle: another fd's data is dispatched within kEpollEvery passes.
	other.poke();
	unsigned passes = 0;
	while (other.bytes == 0 && passes < 2 * ProgressEngine::kEpollEvery) {
		engine.progress();
		++passes;
	}
	EXPECT_EQ(other.bytes, 1);
	EXPECT_LE(passes, ProgressEngine::kEpollEvery);

	// Hot fd flooding (data on every pass): the pass after a busy one rests and the one
	// after that asks epoll too, so the other fd waits two passes, not kEpollEvery.
	for (int round = 0; round < 3; ++round) {
		hot.poke();
		engine.progress(); // hot busy
		other.poke();
		hot.poke();
		engine.progress(); // rests
		engine.progress(); // epoll due: the other fd is served
		EXPECT_EQ(other.bytes, 2 + round) << "round " << round;
	}
}

// A reader that drains its CQ until it finds nothing (Open MPI's MTL) makes a pass right
// after the one that brought its message, before it answers: that pass reads nothing and
// asks no epoll (two system calls that would find nothing on every message's turnaround);
// the pass after it does both, so nothing that came meanwhile waits longer than that.
TEST(ProgressHot, PassAfterABusyOneRests)
{
	ProgressEngine engine;
	engine.set_rest_window(std::chrono::seconds(60)); // a stall of the test changes nothing
	PipeReader hot(true), other(false);
	ASSERT_EQ(engine.add_fd(hot.fd(), EPOLLIN, &hot), 0);
	ASSERT_EQ(engine.add_fd(other.fd(), EPOLLIN, &other), 0);
	hot.poke();
	engine.progress(); // epoll reports it: hot from now on
	ASSERT_EQ(hot.ready_calls, 1);
	for (int round = 0; round < 3; ++round) {
		SCOPED_TRACE(round);
		int polls = hot.poll_calls;
		hot.poke();
		engine.progress(); // the message: read directly
		EXPECT_EQ(hot.poll_calls, polls + 1);
		EXPECT_EQ(hot.bytes, 2 + 2 * round);
		// Data arriving for both right after: the next pass touches neither fd.
		hot.poke();
		other.poke();
		engine.progress();
		EXPECT_EQ(hot.poll_calls, polls + 1);
		EXPECT_EQ(hot.bytes, 2 + 2 * round);
		EXPECT_EQ(other.ready_calls, round);
		// The pass after it reads the hot fd and asks epoll for the other.
		engine.progress();
		EXPECT_EQ(hot.poll_calls, polls + 2);
		EXPECT_EQ(hot.bytes, 3 + 2 * round);
		EXPECT_EQ(other.ready_calls, round + 1);
		engine.progress(); // rests after that busy pass
	}
	EXPECT_EQ(hot.ready_calls, 1); // every later byte was read directly
}

// A reader that comes back later than the rest window (other work between its calls)
// gets an ordinary pass: its message is not found one call late.
TEST(ProgressHot, PassLaterThanTheRestWindowReads)
{
	ProgressEngine engine;
	engine.set_rest_window(std::chrono::nanoseconds(0));
	PipeReader hot(true);
	ASSERT_EQ(engine.add_fd(hot.fd(), EPOLLIN, &hot), 0);
	hot.poke();
	engine.progress(); // through epoll: hot from now on
	hot.poke();
	engine.progress(); // read directly: busy
	hot.poke();
	engine.progress(); // outside the window: reads
	EXPECT_EQ(hot.bytes, 3);
}

// A reader about to sleep after a rest pass still asks epoll first: data that came
// during the rest is not slept on.
TEST(ProgressHot, SleeperAfterARestPassAsksEpoll)
{
	ProgressEngine engine;
	engine.set_rest_window(std::chrono::seconds(60));
	PipeReader hot(true);
	ASSERT_EQ(engine.add_fd(hot.fd(), EPOLLIN, &hot), 0);
	hot.poke();
	engine.progress(); // through epoll: hot from now on
	hot.poke();
	engine.progress(); // read directly: busy
	hot.poke();
	engine.progress(); // rests
	EXPECT_EQ(hot.bytes, 2);
	EXPECT_FALSE(engine.prepare_sleep()); // epoll reported the byte: no sleep
	EXPECT_EQ(hot.bytes, 3);
}

TEST(ProgressHot, DecliningHandlerIsAskedOnceAndThenOnlyThroughEpoll)
{
	ProgressEngine engine;
	PipeReader plain(false);
	ASSERT_EQ(engine.add_fd(plain.fd(), EPOLLIN, &plain), 0);
	for (int i = 0; i < 5; ++i) {
		plain.poke();
		engine.progress();
		EXPECT_EQ(plain.bytes, i + 1); // every pass: epoll is not skipped for it
	}
	EXPECT_EQ(plain.poll_calls, 0);
	EXPECT_EQ(plain.ready_calls, 5);
}

TEST(ProgressHot, PausedReaderIsNotPolled)
{
	ProgressEngine engine;
	PipeReader hot(true);
	ASSERT_EQ(engine.add_fd(hot.fd(), EPOLLIN, &hot), 0);
	hot.poke();
	engine.progress();
	ASSERT_EQ(engine.modify_fd(hot.fd(), 0, &hot), 0); // reading paused
	hot.poke();
	for (int i = 0; i < 20; ++i)
		engine.progress();
	EXPECT_EQ(hot.poll_calls, 0);
	EXPECT_EQ(hot.bytes, 1);
	ASSERT_EQ(engine.modify_fd(hot.fd(), EPOLLIN, &hot), 0); // resumed: epoll reports it
	engine.progress();
	EXPECT_EQ(hot.bytes, 2);
}

TEST(ProgressHot, IdleHotFdCoolsDown)
{
	ProgressEngine engine;
	PipeReader hot(true);
	ASSERT_EQ(engine.add_fd(hot.fd(), EPOLLIN, &hot), 0);
	hot.poke();
	engine.progress();
	for (unsigned i = 0; i < ProgressEngine::kHotIdlePasses + 10; ++i)
		engine.progress();
	EXPECT_EQ(hot.poll_calls, static_cast<int>(ProgressEngine::kHotIdlePasses));
}

TEST(ProgressHot, HandlerRemovingFdsDuringAPollIsSafe)
{
	ProgressEngine engine;
	PipeReader a(true), b(true);
	ASSERT_EQ(engine.add_fd(a.fd(), EPOLLIN, &a), 0);
	ASSERT_EQ(engine.add_fd(b.fd(), EPOLLIN, &b), 0);
	a.poke();
	b.poke();
	engine.progress();
	ASSERT_EQ(a.ready_calls + b.ready_calls, 2);
	// Whichever is polled first removes both; the other must not be called afterwards.
	auto remove_both = [&] {
		engine.remove_fd(a.fd());
		engine.remove_fd(b.fd());
	};
	a.on_poll = remove_both;
	b.on_poll = remove_both;
	engine.progress();
	EXPECT_EQ(a.poll_calls + b.poll_calls, 1);
	engine.progress();
	EXPECT_EQ(a.poll_calls + b.poll_calls, 1);
}

// A busy hot fd whose handler agrees leaves the epoll set (its packets then run no epoll
// wake-ups in the sender's system call) and comes back whenever something other than this
// busy poller may need epoll to see it.
class LeavingReader : public PipeReader {
public:
	LeavingReader() : PipeReader(true) {}
	bool may_leave_epoll() override { return agree; }
	bool agree = true;
};

bool readable(int fd, int timeout_ms)
{
	pollfd p{fd, POLLIN, 0};
	return ::poll(&p, 1, timeout_ms) == 1;
}

// Registers the reader, then busy passes, a byte each, until its fd has left the set (or
// a bound is reached; the caller checks fds_out_of_epoll()).
void add_and_spin_until_out(ProgressEngine &engine, LeavingReader &reader)
{
	ASSERT_EQ(engine.add_fd(reader.fd(), EPOLLIN, &reader), 0);
	reader.poke();
	engine.progress(); // epoll reports it: hot
	for (unsigned i = 0; i < 4 * ProgressEngine::kLeaveEpollAfter &&
			     engine.fds_out_of_epoll() == 0;
	     ++i) {
		reader.poke();
		engine.progress(); // busy
		engine.progress(); // rests
	}
}

// Each test's engine, with no rest after a busy pass (so that every other pass is busy).
class ProgressLeave : public ::testing::Test {
protected:
	ProgressLeave() { engine.set_rest_window(std::chrono::nanoseconds(0)); }
	ProgressEngine engine;
};

TEST_F(ProgressLeave, ABusyHotFdLeavesTheSetAndIsStillRead)
{
	LeavingReader reader;
	add_and_spin_until_out(engine, reader);
	ASSERT_EQ(engine.fds_out_of_epoll(), 1u);
	int bytes = reader.bytes;
	reader.poke();
	EXPECT_FALSE(readable(engine.fd(), 0)); // no longer in the set
	engine.progress();
	EXPECT_EQ(reader.bytes, bytes + 1); // the pass reads it directly
	EXPECT_EQ(engine.remove_fd(reader.fd()), 0);
	EXPECT_EQ(engine.fds_out_of_epoll(), 0u);
}

TEST_F(ProgressLeave, AHandlerThatDoesNotAgreeStaysInTheSet)
{
	LeavingReader reader;
	reader.agree = false;
	add_and_spin_until_out(engine, reader);
	EXPECT_EQ(engine.fds_out_of_epoll(), 0u);
	reader.poke();
	EXPECT_TRUE(readable(engine.fd(), 0));
}

TEST_F(ProgressLeave, ItRejoinsBeforeASleepAndWhatCameMeanwhileVetoesIt)
{
	LeavingReader reader;
	add_and_spin_until_out(engine, reader);
	ASSERT_EQ(engine.fds_out_of_epoll(), 1u);
	for (int i = 0; i < 20; ++i)
		engine.progress(); // idle passes: the last ones asked epoll and found it quiet
	reader.poke();
	int bytes = reader.bytes;
	// The byte came while the fd was out of the set: the sleep must not happen on it.
	bool sleep = engine.prepare_sleep();
	EXPECT_EQ(engine.fds_out_of_epoll(), 0u);
	EXPECT_TRUE(!sleep || readable(engine.fd(), 0));
	if (sleep)
		engine.progress();
	EXPECT_EQ(reader.bytes, bytes + 1);
	// A quiet fd back in the set wakes a sleeper again.
	ASSERT_TRUE(engine.prepare_sleep());
	reader.poke();
	EXPECT_TRUE(readable(engine.fd(), 0));
}

TEST_F(ProgressLeave, TheLeaseWakesASleeperThatNeverPreparedItsSleep)
{
	LeavingReader reader;
	add_and_spin_until_out(engine, reader);
	ASSERT_EQ(engine.fds_out_of_epoll(), 1u);
	// The poller stops; a sleeper that watches fd() without prepare_sleep (an EQ reader)
	// is woken by the lease, and the pass it runs puts the fd back.
	reader.poke();
	ASSERT_TRUE(readable(engine.fd(), 10000));
	int bytes = reader.bytes;
	for (int i = 0; i < 3 && engine.fds_out_of_epoll(); ++i)
		engine.progress();
	EXPECT_EQ(engine.fds_out_of_epoll(), 0u);
	engine.progress();
	EXPECT_GE(reader.bytes, bytes); // (read directly or through epoll)
	EXPECT_EQ(engine.remove_fd(reader.fd()), 0);
	engine.progress(); // the lease fired: nothing to do
	reader.poke();
	EXPECT_FALSE(readable(engine.fd(), 0));
}

TEST_F(ProgressLeave, CoolingModifyingAndEvictionPutItBack)
{
	{
		LeavingReader reader;
		add_and_spin_until_out(engine, reader);
		ASSERT_EQ(engine.fds_out_of_epoll(), 1u);
		ASSERT_EQ(engine.modify_fd(reader.fd(), EPOLLIN | EPOLLOUT, &reader), 0);
		EXPECT_EQ(engine.fds_out_of_epoll(), 0u);
		reader.poke();
		EXPECT_TRUE(readable(engine.fd(), 0));
		ASSERT_EQ(engine.remove_fd(reader.fd()), 0);
	}
	{
		LeavingReader reader;
		add_and_spin_until_out(engine, reader);
		ASSERT_EQ(engine.fds_out_of_epoll(), 1u);
		for (unsigned i = 0; i < ProgressEngine::kHotIdlePasses + 10; ++i)
			engine.progress();
		EXPECT_EQ(engine.fds_out_of_epoll(), 0u); // cooled
		reader.poke();
		EXPECT_TRUE(readable(engine.fd(), 0));
		ASSERT_EQ(engine.remove_fd(reader.fd()), 0);
	}
	{
		LeavingReader reader;
		std::vector<std::unique_ptr<PipeReader>> others;
		for (size_t i = 0; i < ProgressEngine::kHotFds; ++i)
			others.push_back(std::make_unique<PipeReader>(true));
		add_and_spin_until_out(engine, reader);
		ASSERT_EQ(engine.fds_out_of_epoll(), 1u);
		for (auto &other : others) {
			ASSERT_EQ(engine.add_fd(other->fd(), EPOLLIN, other.get()), 0);
			other->poke();
		}
		for (int i = 0; i < 4 * static_cast<int>(ProgressEngine::kEpollEvery); ++i)
			engine.progress(); // the others become hot and push it out of the list
		EXPECT_EQ(engine.fds_out_of_epoll(), 0u);
		int bytes = reader.bytes;
		reader.poke();
		for (int i = 0; i < 2 * static_cast<int>(ProgressEngine::kEpollEvery); ++i)
			engine.progress();
		EXPECT_EQ(reader.bytes, bytes + 1);
		for (auto &other : others)
			ASSERT_EQ(engine.remove_fd(other->fd()), 0);
		ASSERT_EQ(engine.remove_fd(reader.fd()), 0);
	}
}

} // namespace
