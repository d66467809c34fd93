// Cost per message, for profiling (disabled by default; run with
// --gtest_also_run_disabled_tests --gtest_filter='ShmCost.*' under valgrind --tool=callgrind,
// SHM_COST_ROUNDS=N): a single-threaded ping-pong in one process, so the instruction count
// per message is deterministic (no spinning while the peer is descheduled, unlike two
// processes). Two runs with different N give instructions per message by difference.
// MsgPingPong uses shm FI_EP_MSG endpoints, RxmPingPong two shm;ofi_rxm FI_EP_RDM ones.
#include "prov/shm/test/shm_test_pair.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

namespace {

using shm_test::ShmPair;

int rounds()
{
	const char *env = getenv("SHM_COST_ROUNDS");
	return env ? atoi(env) : 1000;
}

// Reads `cq` until one completion (bounded by a pass count, not a clock: no syscalls).
bool poll_one(fid_cq *cq)
{
	fi_cq_data_entry e;
	for (long i = 0; i < 100000000; i++) {
		ssize_t ret = fi_cq_read(cq, &e, 1);
		if (ret == 1)
			return true;
		if (ret != -FI_EAGAIN)
			return false;
	}
	return false;
}

TEST(ShmCost, DISABLED_MsgPingPong)
{
	ShmPair p;
	ASSERT_TRUE(p.open());
	ASSERT_TRUE(p.connect());
	for (int i = 0, n = rounds(); i < n; i++)
		ASSERT_STREQ(nullptr, shm_test::ping_pong_round(p, poll_one)) << "round " << i;
}

TEST(ShmCost, DISABLED_RxmPingPong)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("shm;ofi_rxm");
	fi_info *info = nullptr;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info));
	fid_fabric *fabric;
	fid_domain *domain;
	fid_av *av;
	ASSERT_EQ(0, fi_fabric(info->fabric_attr, &fabric, nullptr));
	ASSERT_EQ(0, fi_domain(fabric, info, &domain, nullptr));
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	ASSERT_EQ(0, fi_av_open(domain, &av_attr, &av, nullptr));
	fid_ep *ep[2];
	fid_cq *cq[2];
	fi_addr_t addr[2];
	for (int i = 0; i < 2; i++) {
		fi_cq_attr cq_attr{};
		cq_attr.format = FI_CQ_FORMAT_DATA;
		ASSERT_EQ(0, fi_cq_open(domain, &cq_attr, &cq[i], nullptr));
		ASSERT_EQ(0, fi_endpoint(domain, info, &ep[i], nullptr));
		ASSERT_EQ(0, fi_ep_bind(ep[i], &av->fid, 0));
		ASSERT_EQ(0, fi_ep_bind(ep[i], &cq[i]->fid, FI_TRANSMIT | FI_RECV));
		ASSERT_EQ(0, fi_enable(ep[i]));
	}
	for (int i = 0; i < 2; i++) {
		char name[128];
		size_t len = sizeof(name);
		ASSERT_EQ(0, fi_getname(&ep[i]->fid, name, &len));
		ASSERT_EQ(1, fi_av_insert(av, name, 1, &addr[i], 0, nullptr));
	}
	char out[64] = "ping", in[2][64];
	fi_context ctx[4];
	// Both CQs are read while waiting (an endpoint progresses through its own CQ, and the
	// first send needs the connector's progress too); completions are counted per CQ.
	long got[2] = {0, 0};
	auto wait_for = [&](int side, long count) {
		fi_cq_data_entry e;
		for (long i = 0; i < 100000000 && got[side] < count; i++) {
			for (int c = 0; c < 2; c++) {
				ssize_t ret = fi_cq_read(cq[c], &e, 1);
				if (ret == 1)
					got[c]++;
				else if (ret != -FI_EAGAIN)
					return false;
			}
		}
		return got[side] >= count;
	};
	for (int i = 0, n = rounds(); i < n; i++) {
		ASSERT_EQ(0, fi_recv(ep[0], in[0], 64, nullptr, addr[1], &ctx[0]));
		ASSERT_EQ(0, fi_recv(ep[1], in[1], 64, nullptr, addr[0], &ctx[1]));
		ASSERT_EQ(0, fi_send(ep[0], out, 64, nullptr, addr[1], &ctx[2]));
		ASSERT_TRUE(wait_for(1, 2L * i + 1));
		ASSERT_EQ(0, fi_send(ep[1], out, 64, nullptr, addr[0], &ctx[3]));
		ASSERT_TRUE(wait_for(0, 2L * i + 2));
		ASSERT_TRUE(wait_for(1, 2L * i + 2));
	}
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, fi_close(&ep[i]->fid));
		EXPECT_EQ(0, fi_close(&cq[i]->fid));
	}
	EXPECT_EQ(0, fi_close(&av->fid));
	EXPECT_EQ(0, fi_close(&domain->fid));
	EXPECT_EQ(0, fi_close(&fabric->fid));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

} // namespace
