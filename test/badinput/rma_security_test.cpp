// RMA security: a peer that uses a wrong key, a closed MR, an address outside the region or
// an access the region was not registered for is refused with an error completion at the
// initiator, and the target memory (the region and guard bytes around it) stays untouched.
// Each case is followed by a valid access on the same pair, so a refusal caused by a broken
// path (rather than by the check) fails the test.
#include "test/badinput/fabric_harness.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

constexpr size_t kGuard = 256;
constexpr size_t kRegion = 4096;
constexpr uint8_t kTargetFill = 0x5a;
constexpr uint8_t kSourceFill = 0xc3;

// Target memory: guard | region | guard, all filled with kTargetFill.
struct TargetMemory {
	std::vector<uint8_t> bytes = std::vector<uint8_t>(kGuard + kRegion + kGuard, kTargetFill);
	uint8_t *region() { return bytes.data() + kGuard; }
	bool untouched() const
	{
		for (uint8_t b : bytes)
			if (b != kTargetFill)
				return false;
		return true;
	}
	void reset() { std::fill(bytes.begin(), bytes.end(), kTargetFill); }
};

struct Registration {
	fid_mr *mr = nullptr;
	int ret = 0;
	Registration(harness::Side &side, void *buf, size_t len, uint64_t access)
	{
		ret = fi_mr_reg(side.domain, buf, len, access, 0, 0, 0, &mr, nullptr);
		if (ret == 0 && (side.info->domain_attr->mr_mode & FI_MR_ENDPOINT)) {
			ret = fi_mr_bind(mr, &side.ep->fid, 0);
			if (ret == 0)
				ret = fi_mr_enable(mr);
		}
	}
	~Registration() { close(); }
	void close()
	{
		if (mr)
			fi_close(&mr->fid);
		mr = nullptr;
	}
	uint64_t key() const { return fi_mr_key(mr); }
};

enum class Op { write, read };

class RmaSecurity : public ::testing::TestWithParam<std::string> {
protected:
	void SetUp() override
	{
		rdm = GetParam() == "tcp;ofi_rxm";
		info = rdm ? harness::rdm_info(FI_MSG | FI_RMA) : harness::msg_info(FI_MSG | FI_RMA);
		ASSERT_NE(nullptr, info) << GetParam() << " not available";
		if (rdm) {
			rdm_pair = std::make_unique<harness::RdmPair>(info);
			ASSERT_TRUE(rdm_pair->ok);
			initiator = &rdm_pair->a;
			target = &rdm_pair->b;
			peer = rdm_pair->b_at_a;
		} else {
			msg_pair = std::make_unique<harness::MsgPair>(info);
			ASSERT_TRUE(msg_pair->ok);
			initiator = &msg_pair->a;
			target = &msg_pair->b;
			peer = 0;
		}
		// Larger than the region, so requests longer than the region stay inside local memory.
		source.assign(kRegion + 64, kSourceFill);
		sink.assign(kRegion + 64, 0);
		source_mr = std::make_unique<Registration>(*initiator, source.data(), source.size(),
							   FI_WRITE | FI_READ | FI_SEND | FI_RECV);
		ASSERT_EQ(0, source_mr->ret);
		sink_mr = std::make_unique<Registration>(*initiator, sink.data(), sink.size(),
							 FI_WRITE | FI_READ | FI_SEND | FI_RECV);
		ASSERT_EQ(0, sink_mr->ret);
	}
	void TearDown() override
	{
		source_mr.reset();
		sink_mr.reset();
		rdm_pair.reset();
		msg_pair.reset();
		fi_freeinfo(info);
	}

	// The remote address of byte 'offset' of the target region (may lie outside it).
	uint64_t remote_addr(long offset)
	{
		uint64_t base = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
					? reinterpret_cast<uint64_t>(memory.region())
					: 0;
		return base + offset;
	}

	// Issues one RMA and returns its completion; 'completed' is false on timeout.
	harness::Completion issue(Op op, uint64_t addr, size_t len, uint64_t key, bool &completed)
	{
		static int context;
		ssize_t ret;
		if (op == Op::write)
			ret = fi_write(initiator->ep, source.data(), len, fi_mr_desc(source_mr->mr), peer,
				       addr, key, &context);
		else
			ret = fi_read(initiator->ep, sink.data(), len, fi_mr_desc(sink_mr->mr), peer, addr,
				      key, &context);
		if (ret < 0) {
			// Refusing at post time is also a refusal; report it as an error completion.
			completed = true;
			return {true, &context, 0, static_cast<int>(-ret)};
		}
		return harness::wait_for(*initiator, *target, &context, completed);
	}

	void expect_refused(const char *what, Op op, uint64_t addr, size_t len, uint64_t key)
	{
		SCOPED_TRACE(what);
		std::fill(sink.begin(), sink.end(), 0);
		bool completed = false;
		harness::Completion c = issue(op, addr, len, key, completed);
		ASSERT_TRUE(completed) << what << ": no completion (hang)";
		EXPECT_TRUE(c.error) << what << ": was accepted";
		EXPECT_TRUE(memory.untouched()) << what << ": target memory changed";
		if (op == Op::read) {
			for (uint8_t b : sink)
				ASSERT_EQ(0, b) << what << ": target memory leaked into the read buffer";
		}
	}

	void expect_allowed(Op op, uint64_t key)
	{
		bool completed = false;
		memory.reset();
		harness::Completion c = issue(op, remote_addr(0), kRegion, key, completed);
		ASSERT_TRUE(completed);
		ASSERT_FALSE(c.error) << "valid access failed: " << fi_strerror(c.err);
		if (op == Op::write) {
			EXPECT_EQ(kSourceFill, memory.region()[0]);
			EXPECT_EQ(kSourceFill, memory.region()[kRegion - 1]);
			EXPECT_EQ(kTargetFill, memory.bytes[kGuard - 1]);
			EXPECT_EQ(kTargetFill, memory.bytes[kGuard + kRegion]);
		} else {
			EXPECT_EQ(kTargetFill, sink[0]);
			EXPECT_EQ(kTargetFill, sink[kRegion - 1]);
		}
		memory.reset();
	}

	bool rdm = false;
	fi_info *info = nullptr;
	std::unique_ptr<harness::RdmPair> rdm_pair;
	std::unique_ptr<harness::MsgPair> msg_pair;
	harness::Side *initiator = nullptr, *target = nullptr;
	fi_addr_t peer = 0;
	TargetMemory memory;
	std::vector<uint8_t> source, sink;
	std::unique_ptr<Registration> source_mr, sink_mr;
};

TEST_P(RmaSecurity, WrongKeyIsRefused)
{
	Registration target_mr(*target, memory.region(), kRegion, FI_REMOTE_WRITE | FI_REMOTE_READ);
	ASSERT_EQ(0, target_mr.ret);
	uint64_t wrong = target_mr.key() + 0x10001;
	expect_refused("write, wrong key", Op::write, remote_addr(0), 64, wrong);
	expect_refused("read, wrong key", Op::read, remote_addr(0), 64, wrong);
	expect_allowed(Op::write, target_mr.key());
	expect_allowed(Op::read, target_mr.key());
}

TEST_P(RmaSecurity, OutOfRegionIsRefused)
{
	Registration target_mr(*target, memory.region(), kRegion, FI_REMOTE_WRITE | FI_REMOTE_READ);
	ASSERT_EQ(0, target_mr.ret);
	uint64_t key = target_mr.key();
	expect_refused("write past the end", Op::write, remote_addr(kRegion - 8), 16, key);
	expect_refused("write after the end", Op::write, remote_addr(kRegion), 8, key);
	expect_refused("read past the end", Op::read, remote_addr(kRegion - 8), 16, key);
	if (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) {
		expect_refused("write before the start", Op::write, remote_addr(-8), 16, key);
		expect_refused("read before the start", Op::read, remote_addr(-64), 64, key);
	}
	// Length arithmetic that wraps around 2^64 must not pass the bounds check.
	expect_refused("write at a wrapping address", Op::write, ~0ULL - 3, 16, key);
	expect_refused("write of the whole region plus one", Op::write, remote_addr(0), kRegion + 1,
		       key);
	expect_allowed(Op::write, key);
	expect_allowed(Op::read, key);
}

TEST_P(RmaSecurity, AccessNotRegisteredIsRefused)
{
	Registration read_only(*target, memory.region(), kRegion, FI_REMOTE_READ);
	ASSERT_EQ(0, read_only.ret);
	expect_refused("write into a read-only region", Op::write, remote_addr(0), 64, read_only.key());
	expect_allowed(Op::read, read_only.key());
	read_only.close();

	Registration write_only(*target, memory.region(), kRegion, FI_REMOTE_WRITE);
	ASSERT_EQ(0, write_only.ret);
	expect_refused("read from a write-only region", Op::read, remote_addr(0), 64, write_only.key());
	expect_allowed(Op::write, write_only.key());
	write_only.close();

	Registration local_only(*target, memory.region(), kRegion, FI_SEND | FI_RECV);
	ASSERT_EQ(0, local_only.ret);
	expect_refused("write into a local-only region", Op::write, remote_addr(0), 64,
		       local_only.key());
	expect_refused("read from a local-only region", Op::read, remote_addr(0), 64,
		       local_only.key());
}

TEST_P(RmaSecurity, ClosedRegionIsRefused)
{
	Registration target_mr(*target, memory.region(), kRegion, FI_REMOTE_WRITE | FI_REMOTE_READ);
	ASSERT_EQ(0, target_mr.ret);
	uint64_t key = target_mr.key();
	expect_allowed(Op::write, key);
	target_mr.close();
	expect_refused("write through a closed region", Op::write, remote_addr(0), 64, key);
	expect_refused("read through a closed region", Op::read, remote_addr(0), 64, key);
}

INSTANTIATE_TEST_SUITE_P(Providers, RmaSecurity, ::testing::Values("tcp", "tcp;ofi_rxm"),
			 [](const auto &p) { return p.param == "tcp" ? std::string("tcp")
								    : std::string("tcp_ofi_rxm"); });

}  // namespace
