// System calls of a blocking ping-pong between two processes of one host (issue 20): each
// side waits in fi_cq_sread, so every message is a sleep and a wake-up. What that needs is
// one sleep (poll or epoll_wait), one doorbell write by the sender and one drain of it by the
// receiver per message; every other call (probing epoll sets that are known quiet, reading
// a doorbell through epoll) is time the reader spends between the wake-up and the message.
// Counted, not timed: the calls each process made over kRounds round trips
// (test/count_syscalls.h), over shm;ofi_rxm and over tcp;ofi_rxm once the peers moved to shm;
// the check that fails without the fix is the probes one (before: 1.3 per round trip over
// shm;ofi_rxm, 3.8 switched; after: 0). And an idle reader sleeps (CPU time, not wall time).
#include "prov/rxm/test/rxm_shm_switch_peer.h"
#include "test/count_syscalls.h"

namespace {

using namespace shm_switch_test;

constexpr int kRounds = 200;
// Per process and round trip. The engines a blocked reader sleeps on are not probed with
// epoll_wait before each sleep (the sleeper saw them quiet, or shm's endpoint drained the
// doorbell that woke it itself): before, each sleep probed the shm engine twice (once
// finding the doorbell, once finding it quiet again) and the switched tcp;ofi_rxm the tcp
// engine too. Some slack for a doorbell that came late (the peer rings after it published
// the message) and costs one wake-up and probe. A wait that did not sleep may cost one
// probe: the answer came while the reader armed (shm's membarrier takes microseconds), so
// the doorbell the peer rang for the armed reader is drained, or the engine probed in that
// fi_trywait is probed again at the next one (only a sleep reports it quiet). So the bound
// is 0.3 per round trip, plus one per round trip that did not sleep.
constexpr double kMaxProbesPerSleep = 0.3;
// All calls: a sleep, a doorbell rung and one drained make 3. rxm reads its core EQs at
// least every 50 us while idle, a pass of the core fabric's engine each: after a sleep that
// saw the fabric's fds quiet it asks no epoll, but a read without a sleep before it does
// (on a loaded machine up to once or twice per round trip), which the bound leaves room for.
constexpr double kMaxCallsPerRoundTrip = 6.0;

// Waits in fi_cq_sread until `ctx` completed.
bool sread_until(Peer &p, void *ctx)
{
	auto deadline = Clock::now() + std::chrono::seconds(30);
	while (!p.finished.count(ctx)) {
		CHILD_CHECK(Clock::now() < deadline, "no completion for %p", ctx);
		fi_cq_tagged_entry comp[8];
		ssize_t n = fi_cq_sread(p.cq, comp, 8, nullptr, 5000);
		if (n == -FI_EAGAIN)
			continue;
		CHILD_CHECK(n > 0, "fi_cq_sread: %s", fi_strerror(static_cast<int>(-n)));
		for (ssize_t k = 0; k < n; k++)
			p.finished[comp[k].op_context] = 0;
	}
	p.finished.erase(ctx);
	return true;
}

// One round trip of 64-byte tagged messages: `first` sends and then waits for the answer,
// the other side waits and answers.
bool round_trip(Peer &p, bool first, uint64_t tag)
{
	uint8_t out[64] = {}, in[64] = {};
	int rctx = 0, sctx = 0;
	auto send = [&] {
		return p.post("fi_tsend",
			      [&] { return fi_tsend(p.ep, out, sizeof(out), nullptr, p.peer, tag, &sctx); });
	};
	if (!p.post("fi_trecv", [&] {
		    return fi_trecv(p.ep, in, sizeof(in), nullptr, p.peer, tag, 0, &rctx);
	    }))
		return false;
	if (first && !send())
		return false;
	if (!sread_until(p, &rctx))
		return false;
	if (!first && !send())
		return false;
	return sread_until(p, &sctx);
}

double cpu_ms()
{
	timespec ts{};
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

bool ping_pong_peer(int to_peer, int from_peer, const char *prov, bool expect_move)
{
	Peer p;
	p.prov = prov;
	p.blocking = true;
	if (!p.open(to_peer, from_peer) || !settle(p, expect_move))
		return false;
	const bool first = getenv("SHM_SWITCH_TEST_FIRST") != nullptr;
	for (uint64_t tag = 50000; tag < 50020; tag++) // warm-up: every path taken once
		if (!round_trip(p, first, tag))
			return false;
	long calls = test_count::syscalls();
	long probes = test_count::probes();
	long sleeps = test_count::sleeps();
	double cpu = cpu_ms();
	auto begin = Clock::now();
	for (uint64_t tag = 60000; tag < 60000 + kRounds; tag++)
		if (!round_trip(p, first, tag))
			return false;
	double per_trip = double(test_count::syscalls() - calls) / kRounds;
	double probed = double(test_count::probes() - probes) / kRounds;
	double slept = double(test_count::sleeps() - sleeps) / kRounds;
	double cpu_us = (cpu_ms() - cpu) * 1e3 / kRounds;
	double wall_us = std::chrono::duration<double, std::micro>(Clock::now() - begin).count() /
			 kRounds;
	fprintf(stderr,
		"[pid %d] %s: per round trip %.2f system calls, %.2f probes of watched engines, "
		"%.2f sleeps, %.1f us CPU of %.1f us\n",
		getpid(), prov ? prov : "tcp;ofi_rxm (switched)", per_trip, probed, slept, cpu_us,
		wall_us);
	double max_probes = kMaxProbesPerSleep + std::max(0.0, 1.0 - slept);
	CHILD_CHECK(probed <= max_probes,
		    "%.2f epoll_wait probes of the engines the reader sleeps on per round trip "
		    "with %.2f sleeps (at most %.2f expected)", probed, slept, max_probes);
	CHILD_CHECK(per_trip <= kMaxCallsPerRoundTrip,
		    "%.2f system calls per blocking round trip (at most %.1f expected)", per_trip,
		    kMaxCallsPerRoundTrip);
	return p.sync(69999);
}

// After a round trip, the first side waits in fi_cq_sread for 300 ms with nothing coming
// (the peer waits on the pipe meanwhile): it must sleep, not spin.
bool idle_peer(int to_peer, int from_peer, const char *prov, bool expect_move)
{
	Peer p;
	p.prov = prov;
	p.blocking = true;
	if (!p.open(to_peer, from_peer) || !settle(p, expect_move))
		return false;
	const bool first = getenv("SHM_SWITCH_TEST_FIRST") != nullptr;
	if (!round_trip(p, first, 70000))
		return false;
	char go = 0;
	if (first) {
		double cpu = cpu_ms();
		auto begin = Clock::now();
		fi_cq_tagged_entry comp[8];
		ssize_t n = fi_cq_sread(p.cq, comp, 8, nullptr, 300);
		double used = cpu_ms() - cpu;
		auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
										      begin);
		fprintf(stderr, "[pid %d] %s: idle fi_cq_sread: %zd after %lld ms, %.1f ms CPU\n",
			getpid(), prov ? prov : "tcp;ofi_rxm (switched)", n,
			static_cast<long long>(waited.count()), used);
		CHILD_CHECK(n == -FI_EAGAIN, "fi_cq_sread: %zd with nothing sent", n);
		CHILD_CHECK(used < 30.0, "%.1f ms CPU in a 300 ms idle fi_cq_sread", used);
		CHILD_CHECK(write(to_peer, &go, 1) == 1, "sending the go");
	} else {
		CHILD_CHECK(read(from_peer, &go, 1) == 1, "reading the go");
	}
	return p.sync(79999);
}

void run_ping_pong(const char *env, const char *prov, bool expect_move)
{
	// Blocking reads that poll first (wait_spin.h) rarely sleep in a ping-pong: the sleep
	// path is what is counted here.
	std::string both = std::string(env) + " FI_WAIT_SPIN_USEC=0";
	std::string first = both + " SHM_SWITCH_TEST_FIRST=1";
	run_forked_pair(first.c_str(), both.c_str(), [&](int to_peer, int from_peer) {
		return ping_pong_peer(to_peer, from_peer, prov, expect_move);
	});
}

TEST(RxmSreadCalls, OverShmCore)
{
	run_ping_pong("", "shm;ofi_rxm", false);
}

TEST(RxmSreadCalls, OverTcpMovedToShm)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_ping_pong("FI_OFI_RXM_USE_SHM=1", nullptr, true);
}

TEST(RxmSreadCalls, IdleReaderSleepsOverShmCore)
{
	run_forked_pair("SHM_SWITCH_TEST_FIRST=1", "", [](int to_peer, int from_peer) {
		return idle_peer(to_peer, from_peer, "shm;ofi_rxm", false);
	});
}

TEST(RxmSreadCalls, IdleReaderSleepsOverTcpMovedToShm)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_forked_pair("FI_OFI_RXM_USE_SHM=1 SHM_SWITCH_TEST_FIRST=1", "FI_OFI_RXM_USE_SHM=1",
			[](int to_peer, int from_peer) {
				return idle_peer(to_peer, from_peer, nullptr, true);
			});
}

} // namespace
