// RMA through the public API: read, write, writedata, inject_write and the target-side checks
// (key, range, access) with guard bytes proving refused accesses leave memory untouched.
#include "prov/tcp/test/tcp_test_pair.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using tcp_test::TcpPair;

namespace {

class TcpRma : public ::testing::Test {
protected:
	static constexpr size_t kGuard = 64;
	static constexpr size_t kRegion = 256;

	void SetUp() override
	{
		ASSERT_TRUE(pair.open());
		ASSERT_TRUE(pair.connect());
		// The target region sits between guard bytes that must never change.
		memory.assign(kGuard + kRegion + kGuard, 0x5a);
		ASSERT_EQ(0, fi_mr_reg(pair.domain, memory.data() + kGuard, kRegion,
				       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &rw_mr, nullptr));
		ASSERT_EQ(0, fi_mr_reg(pair.domain, memory.data() + kGuard, kRegion,
				       FI_REMOTE_READ, 0, 0, 0, &ro_mr, nullptr));
		rw_key = fi_mr_key(rw_mr);
		ro_key = fi_mr_key(ro_mr);
		ASSERT_NE(rw_key, ro_key);
	}
	void TearDown() override
	{
		if (rw_mr)
			fi_close(&rw_mr->fid);
		if (ro_mr)
			fi_close(&ro_mr->fid);
	}
	bool guards_intact() const
	{
		for (size_t i = 0; i < kGuard; i++)
			if (memory[i] != 0x5a || memory[kGuard + kRegion + i] != 0x5a)
				return false;
		return true;
	}
	uint8_t *region() { return memory.data() + kGuard; }

	// Expects one error completion for `context` at the initiator.
	void expect_refused(void *context)
	{
		fi_cq_data_entry entry;
		fi_cq_err_entry err{};
		ASSERT_EQ(-FI_EAVAIL, pair.wait_cq(pair.client_cq, &entry, &err));
		EXPECT_EQ(context, err.op_context);
		EXPECT_TRUE(err.err == FI_EACCES || err.err == FI_EINVAL) << err.err;
	}

	TcpPair pair;
	std::vector<uint8_t> memory;
	fid_mr *rw_mr = nullptr, *ro_mr = nullptr;
	uint64_t rw_key = 0, ro_key = 0;
	fi_cq_data_entry entry{};
};

} // namespace

TEST_F(TcpRma, WriteThenReadBack)
{
	std::vector<uint8_t> src(100, 0xc3);
	ASSERT_EQ(0, fi_write(pair.client, src.data(), src.size(), nullptr, 0, 10, rw_key,
			      src.data()));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(FI_RMA | FI_WRITE, entry.flags);
	EXPECT_EQ(0xc3, region()[10]);
	EXPECT_EQ(0xc3, region()[109]);
	EXPECT_EQ(0x5a, region()[110]);

	std::vector<uint8_t> back(100);
	ASSERT_EQ(0, fi_read(pair.client, back.data(), back.size(), nullptr, 0, 10, ro_key,
			     back.data()));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(FI_RMA | FI_READ, entry.flags);
	EXPECT_EQ(src, back);
	EXPECT_TRUE(guards_intact());
	EXPECT_TRUE(pair.cq_stays_empty(pair.server_cq));   // plain RMA is silent at the target
}

TEST_F(TcpRma, WritedataAndInjectWrite)
{
	uint8_t v[4] = {1, 2, 3, 4};
	ASSERT_EQ(0, fi_writedata(pair.client, v, 4, nullptr, 0xabc, 0, 0, rw_key, v));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, entry.flags);
	EXPECT_EQ(0xabcu, entry.data);
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(4, region()[3]);

	ASSERT_EQ(0, fi_inject_write(pair.client, v, 2, 0, 200, rw_key));
	ASSERT_EQ(0, fi_inject_writedata(pair.client, v, 2, 7, 0, 250, rw_key));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(7u, entry.data);
	EXPECT_EQ(1, region()[200]);
	EXPECT_EQ(2, region()[251]);
	EXPECT_TRUE(pair.cq_stays_empty(pair.client_cq));
}

TEST_F(TcpRma, BadKeyRangeAndRightsAreRefusedAndMemoryUntouched)
{
	std::vector<uint8_t> src(32, 0xee);
	char c[6];
	// Unknown key.
	ASSERT_EQ(0, fi_write(pair.client, src.data(), 32, nullptr, 0, 0, rw_key + ro_key + 100,
			      &c[0]));
	expect_refused(&c[0]);
	// Past the end, and straddling the end.
	ASSERT_EQ(0, fi_write(pair.client, src.data(), 32, nullptr, 0, kRegion, rw_key, &c[1]));
	expect_refused(&c[1]);
	ASSERT_EQ(0, fi_write(pair.client, src.data(), 32, nullptr, 0, kRegion - 16, rw_key,
			      &c[2]));
	expect_refused(&c[2]);
	// An offset so large that offset + length wraps around.
	ASSERT_EQ(0, fi_write(pair.client, src.data(), 32, nullptr, 0, UINT64_MAX - 8, rw_key,
			      &c[3]));
	expect_refused(&c[3]);
	// Writing through a read-only registration.
	ASSERT_EQ(0, fi_write(pair.client, src.data(), 32, nullptr, 0, 0, ro_key, &c[4]));
	expect_refused(&c[4]);
	// Reading out of range.
	std::vector<uint8_t> back(32);
	ASSERT_EQ(0, fi_read(pair.client, back.data(), 32, nullptr, 0, kRegion - 8, rw_key,
			     &c[5]));
	expect_refused(&c[5]);

	EXPECT_TRUE(guards_intact());
	for (size_t i = 0; i < kRegion; i++)
		ASSERT_EQ(0x5a, region()[i]) << i;

	// The connection is still fine.
	ASSERT_EQ(0, fi_write(pair.client, src.data(), 32, nullptr, 0, 0, rw_key, nullptr));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(0xee, region()[31]);
	EXPECT_TRUE(guards_intact());
}

TEST(TcpRmaEvents, CountersSeeLocalAndRemoteAccesses)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	EXPECT_TRUE(pair.info->caps & FI_RMA_EVENT);
	fi_cntr_attr attr{};
	attr.events = FI_CNTR_EVENTS_COMP;
	fid_cntr *remote = nullptr;
	ASSERT_EQ(0, fi_cntr_open(pair.domain, &attr, &remote, nullptr));
	pair.before_server_enable = [remote](fid_ep *ep) {
		EXPECT_EQ(0, fi_ep_bind(ep, &remote->fid, FI_REMOTE_WRITE | FI_REMOTE_READ));
	};
	// The target's FI_REMOTE_WRITE/READ counter counts accesses that were carried out.
	ASSERT_TRUE(pair.connect());
	std::vector<uint8_t> buf(64, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(0, fi_mr_reg(pair.domain, buf.data(), buf.size(),
			       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr));
	uint8_t v[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	ASSERT_EQ(0, fi_write(pair.client, v, 8, nullptr, 0, 0, fi_mr_key(mr), nullptr));
	ASSERT_EQ(0, fi_read(pair.client, v, 8, nullptr, 0, 8, fi_mr_key(mr), nullptr));
	// A refused access is not counted.
	ASSERT_EQ(0, fi_write(pair.client, v, 8, nullptr, 0, 60, fi_mr_key(mr), nullptr));
	fi_cq_data_entry entry;
	fi_cq_err_entry err{};
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	ASSERT_EQ(-FI_EAVAIL, pair.wait_cq(pair.client_cq, &entry, &err));
	EXPECT_EQ(2u, fi_cntr_read(remote));
	fi_close(&mr->fid);
	fi_close(&pair.server->fid);
	pair.server = nullptr;
	fi_close(&remote->fid);
}

TEST_F(TcpRma, ClosedRegionIsNoLongerReachable)
{
	ASSERT_EQ(0, fi_close(&rw_mr->fid));
	rw_mr = nullptr;
	uint8_t v = 9;
	ASSERT_EQ(0, fi_write(pair.client, &v, 1, nullptr, 0, 0, rw_key, &v));
	expect_refused(&v);
	EXPECT_EQ(0x5a, region()[0]);
}

TEST_F(TcpRma, MultipleTargetRegionsAreRefusedUpFront)
{
	uint8_t v[2] = {};
	iovec iov{v, 2};
	fi_rma_iov rma[2] = {{0, 1, rw_key}, {8, 1, rw_key}};
	fi_msg_rma msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.rma_iov = rma;
	msg.rma_iov_count = 2;
	EXPECT_EQ(-FI_EINVAL, fi_writemsg(pair.client, &msg, 0));
	msg.rma_iov_count = 1;
	rma[0].len = 2;
	ASSERT_EQ(0, fi_writemsg(pair.client, &msg, FI_COMPLETION));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
}

// A pre-1.5 application asking for FI_MR_BASIC (fi_mr(3): virtual addresses, provider keys)
// gets FI_MR_BASIC back and those semantics: every registration may request key 0 (the
// provider picks), and RMA names the target by its virtual address.
TEST(TcpRmaLegacy, BasicModeMeansProviderKeysAndVirtualAddresses)
{
	for (uint32_t version : {FI_VERSION(1, 4), FI_VERSION(1, 17)}) {
		TcpPair pair;
		pair.version = version;
		pair.mr_mode = FI_MR_BASIC;
		ASSERT_TRUE(pair.open());
		SCOPED_TRACE(version);
		EXPECT_EQ(FI_MR_BASIC, pair.info->domain_attr->mr_mode);
		ASSERT_TRUE(pair.connect());
		std::vector<uint8_t> first(64, 1), second(64, 2);
		fid_mr *mr1 = nullptr, *mr2 = nullptr;
		ASSERT_EQ(0, fi_mr_reg(pair.domain, first.data(), first.size(), FI_REMOTE_WRITE, 0, 0,
				       0, &mr1, nullptr));
		ASSERT_EQ(0, fi_mr_reg(pair.domain, second.data(), second.size(),
				       FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr2, nullptr));
		EXPECT_NE(fi_mr_key(mr1), fi_mr_key(mr2));
		const char text[] = "basic";
		uint64_t where = reinterpret_cast<uintptr_t>(second.data()) + 8;
		ASSERT_EQ(0, fi_write(pair.client, text, sizeof(text), nullptr, 0, where,
				      fi_mr_key(mr2), nullptr));
		fi_cq_data_entry entry{};
		ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
		EXPECT_EQ(0, memcmp(second.data() + 8, text, sizeof(text)));
		EXPECT_EQ(2, second[7]);
		fi_close(&mr1->fid);
		fi_close(&mr2->fid);
	}
}
