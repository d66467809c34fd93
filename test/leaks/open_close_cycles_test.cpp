// 1000 open/close cycles of fabric, domain, EQ, CQ, AV, endpoint and MR (with an enabled
// endpoint and a message through it on tcp;ofi_rxm) must leave the process with the same
// number of file descriptors and flat resident memory. A warm-up phase first lets one-time
// allocations (the provider registry, logging, allocator arenas) settle.
// LEAK_CYCLES in the environment overrides the number of measured cycles.
#include "test/badinput/fabric_harness.h"
#include "test/leaks/process_usage.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using process_usage::open_fd_count;
using process_usage::resident_kib;

int cycles()
{
	const char *env = getenv("LEAK_CYCLES");
	return env ? atoi(env) : 1000;
}

// One full life cycle; returns false if any step failed.
bool one_cycle(fi_info *info, bool exchange)
{
	static std::vector<char> buffer(4096);
	if (info->ep_attr->type == FI_EP_RDM && exchange) {
		harness::RdmPair pair(info);
		if (!pair.ok)
			return false;
		fid_mr *mr = nullptr;
		if (fi_mr_reg(pair.a.domain, buffer.data(), buffer.size(), FI_SEND | FI_RECV, 0, 0, 0, &mr,
			      nullptr))
			return false;
		int rctx, sctx;
		bool ok = fi_recv(pair.b.ep, buffer.data(), 64, nullptr, FI_ADDR_UNSPEC, &rctx) == 0 &&
			  fi_send(pair.a.ep, buffer.data(), 64, fi_mr_desc(mr), pair.b_at_a, &sctx) == 0;
		bool found = false;
		if (ok)
			harness::wait_for(pair.b, pair.a, &rctx, found);
		if (ok && found)
			harness::wait_for(pair.a, pair.b, &sctx, found);
		fi_close(&mr->fid);
		return ok && found;
	}
	harness::Side side(info);
	if (!side.ok)
		return false;
	fid_mr *mr = nullptr;
	if (fi_mr_reg(side.domain, buffer.data(), buffer.size(), FI_SEND | FI_RECV | FI_REMOTE_WRITE, 0,
		      0, 0, &mr, nullptr))
		return false;
	fid_ep *ep = nullptr;
	bool ok = fi_endpoint(side.domain, info, &ep, nullptr) == 0;
	if (ok)
		ok = fi_ep_bind(ep, &side.cq->fid, FI_TRANSMIT | FI_RECV) == 0;
	if (ep)
		fi_close(&ep->fid);
	fi_close(&mr->fid);
	return ok;
}

void check_flat(fi_info *info, bool exchange)
{
	for (int i = 0; i < 20; i++)
		ASSERT_TRUE(one_cycle(info, exchange)) << "warm-up cycle " << i;
	int fds_before = open_fd_count();
	long rss_before = resident_kib();
	int n = cycles();
	for (int i = 0; i < n; i++)
		ASSERT_TRUE(one_cycle(info, exchange)) << "cycle " << i;
	int fds_after = open_fd_count();
	long rss_after = resident_kib();
	printf("%d cycles: fds %d -> %d, RSS %ld KiB -> %ld KiB\n", n, fds_before, fds_after,
	       rss_before, rss_after);
	EXPECT_EQ(fds_before, fds_after);
	// Allowance for allocator noise; a leak of even 1 KiB per cycle exceeds it. On a loaded
	// machine the threads of a cycle overlap differently and malloc may grow a few more arenas
	// once (seen: +1016 KiB over 1000 cycles, flat on rerun): growth over the allowance is a
	// leak only if a second batch of cycles grows again.
	if (rss_after - rss_before >= 768) {
		long rss_first = rss_after;
		for (int i = 0; i < n; i++)
			ASSERT_TRUE(one_cycle(info, exchange)) << "second batch, cycle " << i;
		rss_after = resident_kib();
		printf("first batch grew; %d more cycles: RSS %ld KiB -> %ld KiB\n", n, rss_first,
		       rss_after);
		EXPECT_LT(rss_after - rss_first, 768) << "resident memory grew in both batches";
	}
}

TEST(OpenCloseCycles, TcpMsgObjects)
{
	fi_info *info = harness::msg_info(FI_MSG | FI_RMA);
	ASSERT_NE(nullptr, info);
	check_flat(info, false);
	fi_freeinfo(info);
}

TEST(OpenCloseCycles, RxmObjects)
{
	fi_info *info = harness::rdm_info(FI_MSG | FI_RMA);
	ASSERT_NE(nullptr, info);
	check_flat(info, false);
	fi_freeinfo(info);
}

TEST(OpenCloseCycles, RxmPairsExchangingAMessage)
{
	fi_info *info = harness::rdm_info(FI_MSG | FI_RMA);
	ASSERT_NE(nullptr, info);
	check_flat(info, true);
	fi_freeinfo(info);
}

}  // namespace
