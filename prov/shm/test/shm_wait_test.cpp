// Waiting without spinning and polling without system calls: a busy-polling pair makes no
// system call per message (the doorbell is rung only for a side about to sleep), and a
// receiver that fell asleep in fi_cq_sread, fi_cntr_wait, fi_trywait + poll or behind the
// auto-progress thread wakes for a message sent afterwards, long before its timeout.
#include "prov/shm/test/shm_test_pair.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <poll.h>
#include <sys/resource.h>
#include <string>
#include <thread>
#include <time.h>

namespace {

using namespace std::chrono_literals;
using shm_test::ShmPair;

// read() and write() system calls this process made so far (/proc/self/io).
long read_write_calls()
{
	std::ifstream io("/proc/self/io");
	std::string key;
	long value = 0, total = 0;
	while (io >> key >> value) {
		if (key == "syscr:" || key == "syscw:")
			total += value;
	}
	return total;
}

// Times this thread gave up its CPU to wait.
long voluntary_switches()
{
	rusage usage{};
	getrusage(RUSAGE_THREAD, &usage);
	return usage.ru_nvcsw;
}

double thread_cpu_ms()
{
	timespec ts{};
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

// Polls `cq` (fi_cq_read: progress, no sleeping) until one completion, at most 5 s.
bool poll_one(fid_cq *cq)
{
	auto end = std::chrono::steady_clock::now() + 5s;
	fi_cq_data_entry e;
	while (std::chrono::steady_clock::now() < end) {
		ssize_t ret = fi_cq_read(cq, &e, 1);
		if (ret == 1)
			return true;
		if (ret != -FI_EAGAIN)
			return false;
	}
	return false;
}

constexpr int kRounds = 2000;

// A warm-up message (first passes, lazy fds seen once), then kRounds rounds of the
// busy-polling ping-pong; the read()/write() calls the rounds made.
void count_ping_pong_calls(ShmPair &p, long &calls)
{
	char out[64] = "ping", in[64];
	ASSERT_EQ(0, fi_recv(p.server, in, sizeof(in), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_send(p.client, out, sizeof(out), nullptr, 0, nullptr));
	ASSERT_TRUE(poll_one(p.client_cq));
	ASSERT_TRUE(poll_one(p.server_cq));
	long before = read_write_calls();
	for (int i = 0; i < kRounds; i++)
		ASSERT_STREQ(nullptr, shm_test::ping_pong_round(p, poll_one)) << "round " << i;
	calls = read_write_calls() - before;
}

TEST(ShmWait, BusyPollingPingPongMakesNoSystemCalls)
{
	ShmPair p;
	ASSERT_TRUE(p.open());
	ASSERT_TRUE(p.connect());
	long calls = 0;
	ASSERT_NO_FATAL_FAILURE(count_ping_pong_calls(p, calls));
	// Two messages per round; today's doorbell cost was a write and a read per message.
	EXPECT_LT(calls, 20) << calls << " read/write calls for " << 2 * kRounds << " messages";
}

// Each waiter below is asleep when the message is sent; it must wake for it (not at the
// 5 s timeout) and must have slept (little CPU while waiting).
class ShmSleep : public ::testing::Test {
protected:
	// Has the client send "wake" 150 ms from now, and runs `wait` (which is to sleep until
	// the message) meanwhile, noting when it returned and the CPU this thread used in it.
	// Returns wait's result.
	template <class Wait>
	auto sleep_through_send(Wait wait)
	{
		sender = std::thread([this] {
			std::this_thread::sleep_for(150ms);
			sent_at = std::chrono::steady_clock::now();
			EXPECT_EQ(0, fi_send(p.client, "wake", 5, nullptr, 0, nullptr));
		});
		double cpu = thread_cpu_ms();
		auto ret = wait();
		woke_at = std::chrono::steady_clock::now();
		cpu_ms = thread_cpu_ms() - cpu;
		return ret;
	}
	// The message arrived, and the waiter woke for it (not at its 5 s timeout) and slept.
	void check_woke()
	{
		sender.join();
		EXPECT_STREQ("wake", buf);
		EXPECT_LT(woke_at - sent_at, 1000ms) << "woke by a timeout, not the doorbell";
		EXPECT_LT(cpu_ms, 50.0) << "the waiter spun";
	}
	ShmPair p;
	char buf[8] = {};
	std::thread sender;
	std::chrono::steady_clock::time_point sent_at, woke_at;
	double cpu_ms = 0;
};

TEST_F(ShmSleep, CqSread)
{
	ASSERT_TRUE(p.open(FI_WAIT_FD));
	ASSERT_TRUE(p.connect());
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	fi_cq_data_entry e;
	EXPECT_EQ(1, sleep_through_send(
			     [&] { return fi_cq_sread(p.server_cq, &e, 1, nullptr, 5000); }));
	check_woke();
}

TEST_F(ShmSleep, CntrWait)
{
	fid_cntr *cntr = nullptr;
	p.before_server_enable = [&](fid_ep *ep) {
		fi_cntr_attr attr{};
		attr.events = FI_CNTR_EVENTS_COMP;
		attr.wait_obj = FI_WAIT_UNSPEC;
		ASSERT_EQ(0, fi_cntr_open(p.domain, &attr, &cntr, nullptr));
		ASSERT_EQ(0, fi_ep_bind(ep, &cntr->fid, FI_RECV));
	};
	ASSERT_TRUE(p.open(FI_WAIT_FD));
	ASSERT_TRUE(p.connect());
	ASSERT_NE(nullptr, cntr);
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	EXPECT_EQ(0, sleep_through_send([&] { return fi_cntr_wait(cntr, 1, 5000); }));
	check_woke();
	EXPECT_TRUE(poll_one(p.server_cq));
	EXPECT_EQ(0, fi_close(&p.server->fid));
	p.server = nullptr;
	EXPECT_EQ(0, fi_close(&cntr->fid));
}

TEST_F(ShmSleep, TrywaitAndPoll)
{
	ASSERT_TRUE(p.open(FI_WAIT_FD));
	ASSERT_TRUE(p.connect());
	int fd = -1;
	ASSERT_EQ(0, fi_control(&p.server_cq->fid, FI_GETWAIT, &fd));
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	fid *fids[] = {&p.server_cq->fid};
	fi_cq_data_entry e;
	ssize_t ret = -FI_EAGAIN;
	// Read until empty and allowed to sleep, as fi_trywait(3) asks.
	while ((ret = fi_cq_read(p.server_cq, &e, 1)) == -FI_EAGAIN &&
	       fi_trywait(p.fabric, fids, 1) == -FI_EAGAIN)
		;
	ASSERT_EQ(-FI_EAGAIN, ret);
	pollfd pfd{fd, POLLIN, 0};
	EXPECT_EQ(1, sleep_through_send([&] { return poll(&pfd, 1, 5000); }));
	EXPECT_TRUE(poll_one(p.server_cq));
	check_woke();
}

// An application that polls the FI_GETWAIT fd without ever calling fi_trywait (fi_trywait(3)
// requires the call; some skip it): nothing arms the ring before it sleeps, so the domain's
// engine keeps its sources armed while such an fd is out (ProgressEngine::keep_armed).
TEST_F(ShmSleep, PolledFdWithoutTrywait)
{
	ASSERT_TRUE(p.open(FI_WAIT_FD));
	ASSERT_TRUE(p.connect());
	int fd = -1;
	ASSERT_EQ(0, fi_control(&p.server_cq->fid, FI_GETWAIT, &fd));
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	// Read until the fd is quiet, as such an application does.
	fi_cq_data_entry e;
	pollfd pfd{fd, POLLIN, 0};
	auto quiet_by = std::chrono::steady_clock::now() + 1s;
	while (poll(&pfd, 1, 0) != 0 && std::chrono::steady_clock::now() < quiet_by)
		ASSERT_EQ(-FI_EAGAIN, fi_cq_read(p.server_cq, &e, 1));
	ASSERT_EQ(0, poll(&pfd, 1, 0)) << "the fd never went quiet";
	EXPECT_EQ(1, sleep_through_send([&] { return poll(&pfd, 1, 5000); }))
		<< "the fd never became readable for the message";
	EXPECT_TRUE(poll_one(p.server_cq));
	check_woke();
}

// The first fi_trywait ends that mode: with both CQs' fds exported and the fi_trywait
// protocol followed, a busy-polling ping-pong still makes no system call per message.
TEST(ShmWait, BusyPollingAfterTrywaitMakesNoSystemCalls)
{
	ShmPair p;
	ASSERT_TRUE(p.open(FI_WAIT_FD));
	ASSERT_TRUE(p.connect());
	int fd = -1;
	ASSERT_EQ(0, fi_control(&p.server_cq->fid, FI_GETWAIT, &fd));
	ASSERT_EQ(0, fi_control(&p.client_cq->fid, FI_GETWAIT, &fd));
	fid *fids[] = {&p.server_cq->fid, &p.client_cq->fid};
	EXPECT_EQ(0, fi_trywait(p.fabric, fids, 2));
	long calls = 0;
	ASSERT_NO_FATAL_FAILURE(count_ping_pong_calls(p, calls));
	EXPECT_LT(calls, 20) << calls << " read/write calls for " << 2 * kRounds << " messages";
}

// FI_PROGRESS_AUTO: the engine thread sleeps too, and a blocked reader as well.
TEST_F(ShmSleep, AutoProgress)
{
	ASSERT_TRUE(p.open(FI_WAIT_FD, FI_PROGRESS_AUTO));
	ASSERT_TRUE(p.connect());
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	fi_cq_data_entry e;
	EXPECT_EQ(1, sleep_through_send(
			     [&] { return fi_cq_sread(p.server_cq, &e, 1, nullptr, 5000); }));
	check_woke();
}

// A receiver asleep for long uses (next to) no CPU.
TEST(ShmWait, IdleReceiverSleeps)
{
	ShmPair p;
	ASSERT_TRUE(p.open(FI_WAIT_FD));
	ASSERT_TRUE(p.connect());
	char buf[8];
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	fi_cq_data_entry e;
	// A first short sleep runs the sleeping code once, so that what is measured is the sleep
	// itself and not its first run (under valgrind, translating that code costs ~10-20 ms).
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(p.server_cq, &e, 1, nullptr, 20));
	double cpu = thread_cpu_ms();
	long switches = voluntary_switches();
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(p.server_cq, &e, 1, nullptr, 500));
	cpu = thread_cpu_ms() - cpu;
	switches = voluntary_switches() - switches;
	EXPECT_LT(cpu, 5.0) << "ms of CPU over a 500 ms sleep";
	// It slept through, rather than waking on a short interval to look again.
	EXPECT_LE(switches, 3) << "times this thread went to sleep in a 500 ms read";
}

} // namespace
