// Same-host peers of tcp;ofi_rxm move to shm (FI_OFI_RXM_USE_SHM, rxm_shm.h): two forked
// processes on one host exchange messages of 0 B - 4 MiB both ways, untagged and tagged,
// starting at the first send (so the switch happens while messages are in flight) and again
// once it is done. Every message must arrive intact and in order. Whether the traffic left
// the tcp connection is read from the kernel: the TCP_INFO byte counters of every TCP socket
// of the process (a fact outside our code) must stay flat once the peers moved, and must grow
// when one side has the switch off.
//
// Each process is a fresh fork that sets its environment before its first libfabric call
// (parameters are read once per process); the gtest process itself never opens libfabric.
#include "prov/rxm/test/rxm_shm_switch_peer.h"

#include <poll.h>

namespace {

using namespace shm_switch_test;

const std::vector<size_t> kAllSizes = {0,	  1,	   64,	    1000,    4096,   65536,
				       65537,	  100000,  131072,  131073,  262144, 1 << 20,
				       3333333, 4 << 20};

// One side of a pair: `first` sends a burst at once (the connection opens, and moves, under
// it), the other answers likewise; then both wait for the move and check the tcp counters
// over a second exchange of every size.
bool run_peer(int to_peer, int from_peer, bool expect_shm, bool blocking)
{
	Peer p;
	p.blocking = blocking;
	if (!p.open(to_peer, from_peer))
		return false;
	// During the switch: 200 messages each way, started at once.
	std::vector<size_t> burst;
	for (size_t i = 0; i < 200; i++)
		burst.push_back(kAllSizes[i % kAllSizes.size()] % 300000);
	if (!p.exchange(burst, 0, false))
		return false;
	// Small round trips while the switch settles: the same number on both sides (a side
	// that stopped early would leave the other waiting).
	for (uint64_t seq = 1000; seq < 1200; seq += 10)
		if (!p.exchange({8, 8, 8, 8, 8, 8, 8, 8, 8, 8}, seq, true))
			return false;
	// After: every size, both ways, untagged and tagged.
	uint64_t start = tcp_bytes();
	if (!p.exchange(kAllSizes, 10000, false) || !p.exchange(kAllSizes, 20000, true))
		return false;
	uint64_t moved = tcp_bytes() - start;
	if (expect_shm)
		CHILD_CHECK(moved == 0, "%lu bytes went over tcp after the switch",
			    static_cast<unsigned long>(moved));
	else
		// (rendezvous data is pulled by process_vm_readv: the small sizes count)
		CHILD_CHECK(moved > 10000, "only %lu bytes over tcp, yet a side has shm off",
			    static_cast<unsigned long>(moved));
	if (blocking) {
		// Readers asleep in fi_cq_sread wake for messages over shm: 50 one-message
		// exchanges, each a sleep on both sides; a missed wake-up costs the 1 s timeout.
		auto begin = Clock::now();
		for (uint64_t seq = 40000; seq < 40050; seq++)
			if (!p.exchange({64}, seq, true))
				return false;
		auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
										    begin);
		CHILD_CHECK(took.count() < 5000, "50 blocking exchanges took %lld ms",
			    static_cast<long long>(took.count()));
	}
	// Both sides finish their last exchange before either closes.
	return p.exchange({8}, 30000, true);
}

// The wake-ups of an application that takes the CQ's FI_GETWAIT fd and poll()s it without
// ever calling fi_trywait (fi_trywait(3) asks for the call; some applications skip it). The
// sides take turns: the receiver posts a receive, reads its CQ until the fd is quiet, tells
// the sender over the pipe and sleeps in poll() on the fd (5 s); the sender waits 50 ms and
// sends 64 bytes. The fd must become readable for it well before the timeout. With
// expect_move, the TCP counters stay flat meanwhile: the message came over shm.
bool poll_without_trywait_peer(int to_peer, int from_peer, const char *prov, bool expect_move)
{
	Peer p;
	p.prov = prov;
	p.blocking = true;
	p.no_trywait = true;
	if (!p.open(to_peer, from_peer))
		return false;
	// Taken at once, as such an application does: the shm side opens later.
	int fd = -1;
	CHILD_CHECK(fi_control(&p.cq->fid, FI_GETWAIT, &fd) == 0 && fd >= 0, "FI_GETWAIT");
	if (!settle(p, expect_move))
		return false;
	const bool first = getenv("SHM_SWITCH_TEST_FIRST") != nullptr;
	for (uint64_t round = 0; round < 6; round++) {
		uint64_t tag = 80000 + round;
		uint64_t msg[8] = {tag};
		int ctx = 0, status = -1;
		char go = 0;
		if ((round % 2 == 0) != first) {
			CHILD_CHECK(read(from_peer, &go, 1) == 1, "reading the go");
			std::this_thread::sleep_for(std::chrono::milliseconds(50));
			if (!p.post("fi_tsend", [&] {
				    return fi_tsend(p.ep, msg, sizeof(msg), nullptr, p.peer, tag, &ctx);
			    }) ||
			    !p.wait_for(&ctx, &status))
				return false;
			CHILD_CHECK(status == 0, "send: %s", fi_strerror(-status));
			continue;
		}
		if (!p.post("fi_trecv", [&] {
			    return fi_trecv(p.ep, msg, sizeof(msg), nullptr, p.peer, tag, 0, &ctx);
		    }))
			return false;
		pollfd pfd{fd, POLLIN, 0};
		auto quiet_by = Clock::now() + std::chrono::seconds(2);
		while (poll(&pfd, 1, 0) != 0 && Clock::now() < quiet_by)
			if (!p.poll())
				return false;
		CHILD_CHECK(poll(&pfd, 1, 0) == 0, "the CQ's fd never went quiet");
		CHILD_CHECK(!p.finished.count(&ctx), "received before the go");
		TcpSnapshot before = tcp_snapshot();
		CHILD_CHECK(write(to_peer, &go, 1) == 1, "sending the go");
		auto start = Clock::now();
		int n = poll(&pfd, 1, 5000);
		auto slept = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
										     start);
		CHILD_CHECK(n == 1, "round %lu: the CQ's fd slept through the message (%lld ms)",
			    static_cast<unsigned long>(round), static_cast<long long>(slept.count()));
		CHILD_CHECK(slept.count() < 2000, "round %lu: woke only after %lld ms",
			    static_cast<unsigned long>(round), static_cast<long long>(slept.count()));
		if (!p.wait_for(&ctx, &status))
			return false;
		CHILD_CHECK(status == 0 && msg[0] == tag, "receive: %s", fi_strerror(-status));
		uint64_t moved = tcp_bytes_on_kept(before, tcp_snapshot());
		CHILD_CHECK(!expect_move || moved == 0, "%lu bytes over tcp: not a shm message",
			    static_cast<unsigned long>(moved));
	}
	return p.sync(89999);
}

void run_poll_without_trywait(const char *env, const char *prov, bool expect_move)
{
	std::string first = std::string(env) + " SHM_SWITCH_TEST_FIRST=1";
	run_forked_pair(first.c_str(), env, [&](int to_peer, int from_peer) {
		return poll_without_trywait_peer(to_peer, from_peer, prov, expect_move);
	});
}

void run_pair(const char *env_a, const char *env_b, bool expect_shm, bool blocking = false)
{
	run_forked_pair(env_a, env_b, [&](int to_peer, int from_peer) {
		return run_peer(to_peer, from_peer, expect_shm, blocking);
	});
}

TEST(RxmShmSwitch, BothOnMoveToShmInOrderAndIntact)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1", "FI_OFI_RXM_USE_SHM=1", true);
}

TEST(RxmShmSwitch, BothOnWithoutSharedReceiveContext)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_SRX=0",
		 "FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_SRX=0", true);
}

TEST(RxmShmSwitch, BlockingReadersSleepAndWake)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1", "FI_OFI_RXM_USE_SHM=1", true, true);
}

TEST(RxmShmSwitch, PolledFdWithoutTrywaitWakesForShmMessages)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_poll_without_trywait("FI_OFI_RXM_USE_SHM=1", nullptr, true);
}

TEST(RxmShmSwitch, PolledFdWithoutTrywaitOverShmCore)
{
	run_poll_without_trywait("", "shm;ofi_rxm", false);
}

// A rendezvous request taken from the ring is handled after shm's progress returns
// (rxm_shm_direct.cpp, defer_shm_control): an eager message right behind it must still be
// matched after it, and a second request deferred behind it (defer_behind_deferred) after
// it too. The sender posts two 64 KiB messages (same-host rendezvous) and an 8-byte one,
// untagged, before the receiver looks; the receiver then posts three receives of 64 KiB
// and reads: they must get the messages in the order sent. Handling the eager one first
// (taken in place while the requests wait), or the requests out of order, would give a
// receive another message. Both directions, each side FI_THREAD_DOMAIN and default
// threading in turn.
bool rndv_then_eager_peer(int to_peer, int from_peer, bool thread_domain)
{
	Peer p;
	p.thread_domain = thread_domain;
	if (!p.open(to_peer, from_peer) || !settle(p, true))
		return false;
	const bool first = getenv("SHM_SWITCH_TEST_FIRST") != nullptr;
	constexpr size_t kBig = 65536;
	for (uint64_t round = 0; round < 8; round++) {
		char go = 0;
		if ((round % 2 == 0) == first) {
			std::vector<uint8_t> big(kBig), big2(kBig), small(8);
			for (size_t j = 0; j < big.size(); j++) {
				big[j] = pattern(round, j);
				big2[j] = pattern(round + 50, j);
			}
			for (size_t j = 0; j < small.size(); j++)
				small[j] = pattern(round + 100, j);
			int bctx = 0, b2ctx = 0, sctx = 0, status = -1;
			if (!p.post("fi_send", [&] {
				    return fi_send(p.ep, big.data(), big.size(), nullptr, p.peer, &bctx);
			    }) ||
			    !p.post("fi_send", [&] {
				    return fi_send(p.ep, big2.data(), big2.size(), nullptr, p.peer,
						   &b2ctx);
			    }) ||
			    !p.post("fi_send", [&] {
				    return fi_send(p.ep, small.data(), small.size(), nullptr, p.peer,
						   &sctx);
			    }))
				return false;
			CHILD_CHECK(write(to_peer, &go, 1) == 1, "sending the go");
			if (!p.wait_for(&sctx, &status))
				return false;
			CHILD_CHECK(status == 0, "small send: %s", fi_strerror(-status));
			if (!p.wait_for(&bctx, &status))
				return false;
			CHILD_CHECK(status == 0, "big send: %s", fi_strerror(-status));
			if (!p.wait_for(&b2ctx, &status))
				return false;
			CHILD_CHECK(status == 0, "second big send: %s", fi_strerror(-status));
		} else {
			CHILD_CHECK(read(from_peer, &go, 1) == 1, "reading the go");
			// Both messages are in the ring (the sender wrote them within its calls).
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
			std::vector<uint8_t> a(kBig), a2(kBig), b(kBig);
			int actx = 0, a2ctx = 0, bctx = 0, status = -1;
			if (!p.post("fi_recv", [&] {
				    return fi_recv(p.ep, a.data(), a.size(), nullptr, p.peer, &actx);
			    }) ||
			    !p.post("fi_recv", [&] {
				    return fi_recv(p.ep, a2.data(), a2.size(), nullptr, p.peer,
						   &a2ctx);
			    }) ||
			    !p.post("fi_recv", [&] {
				    return fi_recv(p.ep, b.data(), b.size(), nullptr, p.peer, &bctx);
			    }))
				return false;
			if (!p.wait_for(&actx, &status))
				return false;
			CHILD_CHECK(status == 0, "first receive: %s", fi_strerror(-status));
			if (!p.wait_for(&a2ctx, &status))
				return false;
			CHILD_CHECK(status == 0, "second receive: %s", fi_strerror(-status));
			if (!p.wait_for(&bctx, &status))
				return false;
			CHILD_CHECK(status == 0, "third receive: %s", fi_strerror(-status));
			for (size_t j = 0; j < kBig; j++)
				CHILD_CHECK(a[j] == pattern(round, j),
					    "round %lu: the first receive got another message (byte %zu)",
					    static_cast<unsigned long>(round), j);
			for (size_t j = 0; j < kBig; j++)
				CHILD_CHECK(a2[j] == pattern(round + 50, j),
					    "round %lu: the second receive got another message (byte %zu)",
					    static_cast<unsigned long>(round), j);
			for (size_t j = 0; j < 8; j++)
				CHILD_CHECK(b[j] == pattern(round + 100, j),
					    "round %lu: the third receive got another message (byte %zu)",
					    static_cast<unsigned long>(round), j);
		}
		if (!p.sync(50000 + round))
			return false;
	}
	return true;
}

TEST(RxmShmSwitch, RendezvousThenEagerKeepTheirOrder)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	for (bool thread_domain : {false, true})
		run_forked_pair("FI_OFI_RXM_USE_SHM=1 SHM_SWITCH_TEST_FIRST=1", "FI_OFI_RXM_USE_SHM=1",
				[&](int to_peer, int from_peer) {
					return rndv_then_eager_peer(to_peer, from_peer, thread_domain);
				});
}

TEST(RxmShmSwitch, OneSideOffStaysOnTcp)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1", "FI_OFI_RXM_USE_SHM=0", false);
}

TEST(RxmShmSwitch, OtherSideOffStaysOnTcp)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=0", "FI_OFI_RXM_USE_SHM=1", false);
}

} // namespace
