// RMA and rendezvous of same-host peers moved to shm (README.md "Same-host peers over shm"):
// two forked processes over tcp;ofi_rxm let their connection move, then fi_write / fi_read /
// fi_writedata / fi_inject_write of 0 B - 4 MiB into each other's registered window, and
// rendezvous messages with the same-host pull off. Every byte is checked, and the kernel's
// TCP_INFO byte counters of every TCP socket of the process must stay flat: nothing of it
// travels over tcp once moved. A peer reaches over shm exactly what it reaches over tcp: a
// key it was not given, bytes past the window and a window closed with fi_close give error
// completions, never data.
#include "prov/rxm/test/rxm_shm_switch_peer.h"

namespace {

using namespace shm_switch_test;

const size_t kRmaSizes[] = {0, 1, 64, 4032, 4033, 65536, 1 << 20, 4 << 20};

bool rma_both_ways(Peer &p)
{
	std::vector<uint8_t> src(Peer::kWindow), dst(Peer::kWindow);
	uint64_t seq = 50000;
	int status = -1;
	for (size_t len : kRmaSizes) {
		uint64_t offset = Peer::kWindow - len; // ends at the window's last byte
		for (size_t j = 0; j < len; j++)
			src[j] = pattern(seq, j);
		if (!p.rma_op(true, src.data(), len, offset, p.peer_key, &status))
			return false;
		CHILD_CHECK(status == 0, "fi_write of %zu bytes: %s", len, fi_strerror(-status));
		memset(dst.data(), 0xee, len);
		if (!p.rma_op(false, dst.data(), len, offset, p.peer_key, &status))
			return false;
		CHILD_CHECK(status == 0, "fi_read of %zu bytes: %s", len, fi_strerror(-status));
		CHILD_CHECK(memcmp(src.data(), dst.data(), len) == 0,
			    "fi_read of %zu bytes gave other bytes than fi_write wrote", len);
		seq++;
	}
	// fi_writedata: the peer's CQ reports each write with its data.
	for (uint64_t i = 0; i < 3; i++) {
		int ctx = 0;
		if (!p.post("fi_writedata", [&] {
			    return fi_writedata(p.ep, src.data(), 100, nullptr, 0xda7a0 + i, p.peer,
						p.peer_base + 128 * i, p.peer_key, &ctx);
		    }) ||
		    !p.wait_for(&ctx, &status))
			return false;
		CHILD_CHECK(status == 0, "fi_writedata: %s", fi_strerror(-status));
	}
	// fi_inject_write completes silently: read until its bytes are there (rxm promises
	// no read-after-write order).
	for (size_t j = 0; j < 64; j++)
		src[j] = pattern(seq, j);
	if (!p.post("fi_inject_write", [&] {
		    return fi_inject_write(p.ep, src.data(), 64, p.peer, p.peer_base + 4096,
					   p.peer_key);
	    }))
		return false;
	auto deadline = Clock::now() + std::chrono::seconds(10);
	for (;;) {
		memset(dst.data(), 0, 64);
		if (!p.rma_op(false, dst.data(), 64, 4096, p.peer_key, &status))
			return false;
		CHILD_CHECK(status == 0, "fi_read: %s", fi_strerror(-status));
		if (memcmp(src.data(), dst.data(), 64) == 0)
			break;
		CHILD_CHECK(Clock::now() < deadline, "fi_inject_write's bytes never arrived");
	}
	while (p.remote_data.size() < 3) {
		CHILD_CHECK(Clock::now() < deadline, "%zu of 3 remote CQ data entries",
			    p.remote_data.size());
		if (!p.poll())
			return false;
	}
	std::sort(p.remote_data.begin(), p.remote_data.end());
	CHILD_CHECK(p.remote_data == std::vector<uint64_t>({0xda7a0, 0xda7a1, 0xda7a2}),
		    "wrong remote CQ data");
	p.remote_data.clear();
	return p.sync(59999);
}

// What the peer did not offer stays out of reach: error completions, and no byte moves.
bool rma_refused(Peer &p)
{
	std::vector<uint8_t> buf(4096, 0xee);
	const std::vector<uint8_t> untouched = buf;
	int status = 0;
	uint64_t bad_key = p.peer_key ^ 0x9e3779b97f4a7c15ULL;
	CHILD_CHECK(p.rma_op(true, buf.data(), 64, 0, bad_key, &status) && status != 0,
		    "fi_write under a key never offered succeeded");
	CHILD_CHECK(p.rma_op(false, buf.data(), 64, 0, bad_key, &status) && status != 0,
		    "fi_read under a key never offered succeeded");
	CHILD_CHECK(buf == untouched, "a refused fi_read changed the buffer");
	CHILD_CHECK(p.rma_op(false, buf.data(), 100, Peer::kWindow - 10, p.peer_key, &status) &&
			    status != 0,
		    "fi_read past the window succeeded");
	CHILD_CHECK(buf == untouched, "a refused fi_read changed the buffer");
	CHILD_CHECK(p.rma_op(true, buf.data(), 100, Peer::kWindow - 10, p.peer_key, &status) &&
			    status != 0,
		    "fi_write past the window succeeded");
	if (!p.sync(60000))
		return false;
	// Both close their windows, then try the other's.
	const std::vector<uint8_t> before = p.win;
	CHILD_CHECK(fi_close(&p.win_mr->fid) == 0, "fi_close of the window");
	p.win_mr = nullptr;
	if (!p.sync(60001))
		return false;
	CHILD_CHECK(p.rma_op(true, buf.data(), 64, 0, p.peer_key, &status) && status != 0,
		    "fi_write into a closed window succeeded");
	CHILD_CHECK(p.rma_op(false, buf.data(), 64, 0, p.peer_key, &status) && status != 0,
		    "fi_read from a closed window succeeded");
	CHILD_CHECK(buf == untouched, "a refused fi_read changed the buffer");
	if (!p.sync(60002))
		return false;
	CHILD_CHECK(p.win == before, "the window changed after its fi_close");
	return true;
}

// expect_shm: nothing after the move may cross a TCP socket; else (a side has it off) the
// RMA payload must.
bool rma_peer(int to_peer, int from_peer, bool expect_shm, bool refusals,
	      bool thread_domain = false)
{
	Peer p;
	p.rma = true;
	p.thread_domain = thread_domain;
	if (!p.open(to_peer, from_peer) || !settle(p, expect_shm))
		return false;
	TcpSnapshot start = tcp_snapshot();
	if (!rma_both_ways(p) || (refusals && !rma_refused(p)))
		return false;
	// Rendezvous messages (the same-host pull off: RMA reads, or writes, underneath).
	if (!p.exchange({4 << 20, 200000, 1 << 20}, 70000, false) ||
	    !p.exchange({4 << 20, 3333333}, 70010, true))
		return false;
	uint64_t moved = tcp_bytes_on_kept(start, tcp_snapshot());
	if (expect_shm)
		CHILD_CHECK(moved == 0, "%lu bytes went over tcp after the switch",
			    static_cast<unsigned long>(moved));
	else
		CHILD_CHECK(moved > (4u << 20), "only %lu bytes over tcp, yet a side has shm off",
			    static_cast<unsigned long>(moved));
	return p.sync(99999);
}

void run_rma_pair(const char *env_a, const char *env_b, bool expect_shm, bool refusals = false)
{
	run_forked_pair(env_a, env_b, [&](int to_peer, int from_peer) {
		return rma_peer(to_peer, from_peer, expect_shm, refusals);
	});
}

TEST(RxmShmSwitchRma, BothWaysOverShm)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_rma_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=1",
		     "FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=1", true);
}

TEST(RxmShmSwitchRma, BothWaysOverShmWithoutSameHostPulls)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_rma_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=0",
		     "FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=0", true);
}

TEST(RxmShmSwitchRma, WriteRendezvousOverShm)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_rma_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_RNDV_WRITE=1",
		     "FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_RNDV_WRITE=1", true);
}

TEST(RxmShmSwitchRma, PeerReachesOnlyWhatWasOffered)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_rma_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=0",
		     "FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=0", true, true);
}

TEST(RxmShmSwitchRma, ThreadDomainWithoutLowerLocks)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_forked_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=0",
			"FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=0", [](int to_peer, int from_peer) {
				return rma_peer(to_peer, from_peer, true, true, true);
			});
}

TEST(RxmShmSwitchRma, OneSideOffStaysOnTcp)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_rma_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_CMA=0",
		     "FI_OFI_RXM_USE_SHM=0 FI_OFI_RXM_USE_CMA=0", false, true);
}

} // namespace
