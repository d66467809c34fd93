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

// Opens a domain with `domain_progress`/`threading`, then an endpoint of `ep_progress` on it;
// *enabled is whether fi_endpoint and fi_enable succeeded, *ret fi_endpoint's answer.
bool open_endpoint_on(enum fi_progress domain_progress, enum fi_threading threading,
		      enum fi_progress ep_progress, int *ret)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->fabric_attr->prov_name = strdup(rxm_test::provider());
	hints->domain_attr->mr_mode = rxm_test::mr_mode();
	fi_info *info = nullptr;
	int rc = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE, hints,
			    &info);
	fi_freeinfo(hints);
	CHILD_CHECK(rc == 0, "fi_getinfo: %s", fi_strerror(-rc));
	info->domain_attr->threading = threading;
	info->domain_attr->data_progress = domain_progress;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_cq *cq = nullptr;
	fid_av *av = nullptr;
	fid_ep *ep = nullptr;
	bool ok = fi_fabric(info->fabric_attr, &fabric, nullptr) == 0 &&
		  fi_domain(fabric, info, &domain, nullptr) == 0;
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	ok = ok && fi_cq_open(domain, &cq_attr, &cq, nullptr) == 0 &&
	     fi_av_open(domain, &av_attr, &av, nullptr) == 0;
	info->domain_attr->data_progress = ep_progress;
	*ret = ok ? fi_endpoint(domain, info, &ep, nullptr) : -FI_EOTHER;
	if (*ret == 0) {
		ok = fi_ep_bind(ep, &av->fid, 0) == 0 &&
		     fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) == 0 && fi_enable(ep) == 0;
		fi_cq_tagged_entry e;
		ok = ok && fi_cq_read(cq, &e, 1) == -FI_EAGAIN;
	}
	for (fid *f : {ep ? &ep->fid : nullptr, av ? &av->fid : nullptr, cq ? &cq->fid : nullptr,
		       domain ? &domain->fid : nullptr, fabric ? &fabric->fid : nullptr})
		if (f)
			fi_close(f);
	fi_freeinfo(info);
	CHILD_CHECK(ok, "opening the objects around the endpoint failed");
	return true;
}

// A domain opened FI_THREAD_DOMAIN with manual progress runs its core and shm domains
// without locks (lower_domains_need_no_lock). An endpoint asking FI_PROGRESS_AUTO there would
// start rxm's progress thread beside the application's calls on those lock-free domains: it
// is refused. Auto progress on the domain itself, or a thread-safe domain, keeps the locks
// and takes such endpoints.
TEST(RxmShmSwitchRma, AutoProgressEndpointOnLockFreeLowerDomainsRefused)
{
	run_forked_pair("", "", [](int, int) {
		int ret = 0;
		if (!open_endpoint_on(FI_PROGRESS_MANUAL, FI_THREAD_DOMAIN, FI_PROGRESS_AUTO, &ret))
			return false;
		CHILD_CHECK(ret == -FI_EINVAL, "fi_endpoint: %s, expected -FI_EINVAL",
			    fi_strerror(-ret));
		if (!open_endpoint_on(FI_PROGRESS_AUTO, FI_THREAD_DOMAIN, FI_PROGRESS_AUTO, &ret))
			return false;
		CHILD_CHECK(ret == 0, "auto-progress domain: fi_endpoint: %s", fi_strerror(-ret));
		if (!open_endpoint_on(FI_PROGRESS_MANUAL, FI_THREAD_SAFE, FI_PROGRESS_AUTO, &ret))
			return false;
		CHILD_CHECK(ret == 0, "thread-safe domain: fi_endpoint: %s", fi_strerror(-ret));
		if (!open_endpoint_on(FI_PROGRESS_MANUAL, FI_THREAD_DOMAIN, FI_PROGRESS_MANUAL, &ret))
			return false;
		CHILD_CHECK(ret == 0, "manual endpoint: fi_endpoint: %s", fi_strerror(-ret));
		return true;
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
