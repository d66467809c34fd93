// Isolation of registered memory at the tcp level (issue 15, findings 1 and 8), through the
// public API only:
//  * provider-chosen keys are unpredictable (not a counter);
//  * a region bound to one endpoint (fi_mr_bind) is reachable only over that endpoint's
//    connection; another connection of the same domain gets the unknown-key answer and the
//    memory stays untouched; after fi_close(mr) nobody reaches it;
//  * fi_close(mr) while a large write lands in the region or a large read is sent from it:
//    once close returned 0 the region no longer changes and is no longer read, and the
//    initiator gets an error completion (tcp, and tcp;ofi_rxm application MRs).
#include "test/adversarial/iso_harness.h"

#include <rdma/fi_rma.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <memory>
#include <set>

namespace {

using iso::Completion;
using iso::MsgServer;
using iso::Side;

constexpr uint64_t kRmaCaps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ |
			      FI_REMOTE_WRITE;
constexpr size_t kGuard = 4096;

struct InfoDeleter {
	void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// A buffer with guard bytes on both sides; the region is [region(), region() + len).
struct Guarded {
	explicit Guarded(size_t len) : len(len), bytes(new uint8_t[len + 2 * kGuard])
	{
		memset(bytes.get(), 0x5a, kGuard);
		memset(bytes.get() + kGuard + len, 0xa5, kGuard);
	}
	uint8_t *region() { return bytes.get() + kGuard; }
	bool guards_intact() const
	{
		return std::all_of(bytes.get(), bytes.get() + kGuard,
				   [](uint8_t b) { return b == 0x5a; }) &&
		       std::all_of(bytes.get() + kGuard + len, bytes.get() + 2 * kGuard + len,
				   [](uint8_t b) { return b == 0xa5; });
	}
	size_t len;
	std::unique_ptr<uint8_t[]> bytes;
};

// One tcp server domain with two accepted connections from two client domains.
struct TwoConnections : ::testing::Test {
	void SetUp() override
	{
		info.reset(harness::msg_info(kRmaCaps));
		if (!info)
			GTEST_SKIP() << "tcp provider unavailable";
		server = std::make_unique<MsgServer>(info.get());
		c1 = std::make_unique<Side>(info.get());
		c2 = std::make_unique<Side>(info.get());
		ASSERT_TRUE(server->ok && c1->ok && c2->ok);
		c1->ep = iso::connect_msg(*c1, server->addr, nullptr, 0, server.get());
		ASSERT_NE(c1->ep, nullptr);
		c2->ep = iso::connect_msg(*c2, server->addr, nullptr, 0, server.get());
		ASSERT_NE(c2->ep, nullptr);
		ASSERT_EQ(server->eps.size(), 2u);
	}
	void TearDown() override
	{
		c1.reset();
		c2.reset();
		server.reset();
	}

	// Posts an RMA from 'client' and waits for its completion (true = success).
	bool rma(Side &client, bool write, void *buf, size_t len, uint64_t addr, uint64_t key)
	{
		int op_context = 0;
		void *ctx = &op_context;
		ssize_t ret;
		do {
			ret = write ? fi_write(client.ep, buf, len, nullptr, 0, addr, key, ctx)
				    : fi_read(client.ep, buf, len, nullptr, 0, addr, key, ctx);
			if (ret == -FI_EAGAIN)
				poll_everyone();
		} while (ret == -FI_EAGAIN);
		if (ret)
			return false;
		bool found = false;
		Completion c = iso::wait_completion(client, ctx,
						    {&server->side, c1.get(), c2.get()}, found);
		EXPECT_TRUE(found) << "no completion within " << iso::kWaitSeconds << " s";
		return found && !c.error;
	}
	void poll_everyone()
	{
		server->side.poll();
		c1->poll();
		c2->poll();
	}

	InfoPtr info;
	std::unique_ptr<MsgServer> server;
	std::unique_ptr<Side> c1, c2;
};

TEST_F(TwoConnections, BoundRegionIsReachableOnlyOverItsConnection)
{
	const size_t len = 64 * 1024;
	Guarded mem(len);
	iso::fill_pattern(mem.region(), len, 1);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(server->side.domain, mem.region(), len,
			    FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr), 0);
	ASSERT_EQ(fi_mr_bind(mr, &server->eps[0]->fid, 0), 0);
	ASSERT_EQ(fi_mr_enable(mr), 0);
	uint64_t key = fi_mr_key(mr);

	// The other connection of the same domain: unknown-key answer, memory untouched.
	std::vector<uint8_t> got(4096, 0), junk(4096, 0xee);
	EXPECT_FALSE(rma(*c2, false, got.data(), got.size(), 0, key));
	EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t b) { return b == 0; }));
	EXPECT_FALSE(rma(*c2, true, junk.data(), junk.size(), 0, key));
	EXPECT_FALSE(rma(*c2, true, junk.data(), junk.size(), 8192, key));
	EXPECT_TRUE(iso::check_pattern(mem.region(), len, 1));
	EXPECT_TRUE(mem.guards_intact());

	// Its own connection reads and writes it.
	EXPECT_TRUE(rma(*c1, false, got.data(), got.size(), 0, key));
	EXPECT_TRUE(iso::check_pattern(got.data(), got.size(), 1));
	std::vector<uint8_t> fresh(4096);
	iso::fill_pattern(fresh.data(), fresh.size(), 2);
	EXPECT_TRUE(rma(*c1, true, fresh.data(), fresh.size(), 0, key));
	EXPECT_EQ(memcmp(mem.region(), fresh.data(), fresh.size()), 0);

	// After fi_close(mr) nobody does.
	ASSERT_EQ(fi_close(&mr->fid), 0);
	std::vector<uint8_t> snapshot(mem.region(), mem.region() + len);
	EXPECT_FALSE(rma(*c1, false, got.data(), got.size(), 0, key));
	EXPECT_FALSE(rma(*c1, true, junk.data(), junk.size(), 0, key));
	EXPECT_FALSE(rma(*c2, true, junk.data(), junk.size(), 0, key));
	EXPECT_EQ(memcmp(mem.region(), snapshot.data(), len), 0);
	EXPECT_TRUE(mem.guards_intact());
}

TEST_F(TwoConnections, UnboundRegionKeepsFiMrSemantics)
{
	const size_t len = 8192;
	Guarded mem(len);
	iso::fill_pattern(mem.region(), len, 4);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(server->side.domain, mem.region(), len, FI_REMOTE_READ, 0, 0, 0, &mr,
			    nullptr), 0);
	std::vector<uint8_t> got(len);
	EXPECT_TRUE(rma(*c1, false, got.data(), len, 0, fi_mr_key(mr)));
	EXPECT_TRUE(iso::check_pattern(got.data(), len, 4));
	memset(got.data(), 0, len);
	EXPECT_TRUE(rma(*c2, false, got.data(), len, 0, fi_mr_key(mr)));
	EXPECT_TRUE(iso::check_pattern(got.data(), len, 4));
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

TEST_F(TwoConnections, RegionOfAClosedEndpointIsReachableByNobody)
{
	const size_t len = 4096;
	Guarded mem(len);
	iso::fill_pattern(mem.region(), len, 9);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(server->side.domain, mem.region(), len,
			    FI_REMOTE_READ | FI_REMOTE_WRITE, 0, 0, 0, &mr, nullptr), 0);
	ASSERT_EQ(fi_mr_bind(mr, &server->eps[0]->fid, 0), 0);
	ASSERT_EQ(fi_mr_enable(mr), 0);
	// Binding twice, to another class or to nothing is refused.
	EXPECT_NE(fi_mr_bind(mr, &server->eps[1]->fid, 0), 0);
	EXPECT_NE(fi_mr_bind(mr, &server->side.cq->fid, 0), 0);
	EXPECT_NE(fi_mr_bind(mr, nullptr, 0), 0);

	// The bound endpoint goes; a new connection (the allocator may give its endpoint the
	// same address) must not inherit the region.
	fi_close(&server->eps[0]->fid);
	server->eps.erase(server->eps.begin());
	fi_close(&c1->ep->fid);
	c1->ep = iso::connect_msg(*c1, server->addr, nullptr, 0, server.get());
	ASSERT_NE(c1->ep, nullptr);
	std::vector<uint8_t> junk(len, 0xee), got(len, 0);
	EXPECT_FALSE(rma(*c1, false, got.data(), len, 0, fi_mr_key(mr)));
	EXPECT_FALSE(rma(*c1, true, junk.data(), len, 0, fi_mr_key(mr)));
	EXPECT_FALSE(rma(*c2, true, junk.data(), len, 0, fi_mr_key(mr)));
	EXPECT_TRUE(iso::check_pattern(mem.region(), len, 9));
	EXPECT_EQ(fi_close(&mr->fid), 0);
}

TEST(IsoKeys, ProviderKeysAreUnpredictable)
{
	InfoPtr info(harness::msg_info(kRmaCaps));
	if (!info)
		GTEST_SKIP() << "tcp provider unavailable";
	ASSERT_TRUE(info->domain_attr->mr_mode & FI_MR_PROV_KEY);
	Side side(info.get());
	ASSERT_TRUE(side.ok);
	static uint8_t buf[64];
	std::vector<fid_mr *> mrs(256);
	std::set<uint64_t> keys;
	int small = 0, bits = 0;
	for (auto &mr : mrs) {
		ASSERT_EQ(fi_mr_reg(side.domain, buf, sizeof(buf), FI_REMOTE_READ, 0, 0, 0, &mr,
				    nullptr), 0);
		uint64_t key = fi_mr_key(mr);
		EXPECT_NE(key, 0u);
		EXPECT_NE(key, FI_KEY_NOTAVAIL);
		keys.insert(key);
		small += key < (1ULL << 32);
		bits += std::popcount(key);
	}
	EXPECT_EQ(keys.size(), mrs.size());
	// 256 random 64-bit keys: about none below 2^32 and 32 bits set on average.
	EXPECT_LE(small, 2);
	EXPECT_GT(bits, 256 * 28);
	EXPECT_LT(bits, 256 * 36);
	for (auto *mr : mrs)
		fi_close(&mr->fid);
}

// fi_close(mr) while a large write streams into the region: from the moment close returns
// the region does not change, and the write completes in error at the initiator.
void close_during_write(Side &initiator, fid_ep *ep, fi_addr_t dest, Side &target,
			fid_domain *target_domain)
{
	const size_t len = 32 << 20; // well above what loopback sockets buffer
	Guarded mem(len);
	memset(mem.region(), 0x11, len);
	std::vector<uint8_t> src(len);
	iso::fill_pattern(src.data(), len, 7);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(target_domain, mem.region(), len, FI_REMOTE_WRITE, 0, 0, 0, &mr,
			    nullptr), 0);
	uint64_t addr = (target.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
				? reinterpret_cast<uintptr_t>(mem.region())
				: 0;
	int ctx = 0;
	ASSERT_EQ(fi_write(ep, src.data(), len, nullptr, dest, addr, fi_mr_key(mr), &ctx), 0);
	// Each target poll reads at most what the sockets hold (a few MiB), so the write is
	// caught part-way: its first bytes landed, its last not yet.
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(iso::kWaitSeconds);
	while (memcmp(mem.region(), src.data(), 4096) != 0 &&
	       std::chrono::steady_clock::now() < deadline) {
		initiator.poll();
		target.poll();
	}
	ASSERT_EQ(memcmp(mem.region(), src.data(), 4096), 0) << "the write never started";
	ASSERT_EQ(mem.region()[len - 1], 0x11) << "the write was not caught in flight";
	ASSERT_EQ(fi_close(&mr->fid), 0);
	std::vector<uint8_t> snapshot(mem.region(), mem.region() + len);
	bool found = false;
	Completion c = iso::wait_completion(initiator, &ctx, {&target}, found);
	ASSERT_TRUE(found) << "the write never completed";
	EXPECT_TRUE(c.error) << "the write succeeded into a closed region";
	for (int i = 0; i < 20; i++) { // whatever is still in the sockets
		initiator.poll();
		target.poll();
	}
	EXPECT_EQ(memcmp(mem.region(), snapshot.data(), len), 0)
		<< "the region changed after fi_close(mr) returned 0";
	EXPECT_TRUE(mem.guards_intact());
}

TEST_F(TwoConnections, CloseDuringInflightWriteStopsIt)
{
	close_during_write(*c1, c1->ep, 0, server->side, server->side.domain);
}

TEST_F(TwoConnections, CloseDuringInflightReadStopsIt)
{
	const size_t len = 32 << 20; // well above what loopback sockets buffer
	Guarded mem(len);
	iso::fill_pattern(mem.region(), len, 5);
	fid_mr *mr = nullptr;
	ASSERT_EQ(fi_mr_reg(server->side.domain, mem.region(), len, FI_REMOTE_READ, 0, 0, 0, &mr,
			    nullptr), 0);
	std::vector<uint8_t> dst(len, 0);
	int ctx = 0;
	ASSERT_EQ(fi_read(c1->ep, dst.data(), len, nullptr, 0, 0, fi_mr_key(mr), &ctx), 0);
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(iso::kWaitSeconds);
	while (!iso::check_pattern(dst.data(), 4096, 5) &&
	       std::chrono::steady_clock::now() < deadline) {
		c1->poll();
		server->side.poll();
	}
	ASSERT_TRUE(iso::check_pattern(dst.data(), 4096, 5)) << "the read never started";
	ASSERT_EQ(dst[len - 1], 0) << "the read was not caught in flight";
	ASSERT_EQ(fi_close(&mr->fid), 0);
	// Anything sent from the region from now on would carry this byte.
	memset(mem.region(), 0xee, len);
	bool found = false;
	Completion c = iso::wait_completion(*c1, &ctx, {&server->side}, found);
	ASSERT_TRUE(found) << "the read never completed";
	EXPECT_TRUE(c.error) << "the read succeeded from a closed region";
	// What arrived must be the region's content before the close (or nothing yet).
	std::vector<uint8_t> before(len);
	iso::fill_pattern(before.data(), len, 5);
	size_t wrong = 0;
	for (size_t i = 0; i < len; i++)
		wrong += dst[i] != 0 && dst[i] != before[i];
	EXPECT_EQ(wrong, 0u) << "bytes were read from the region after fi_close(mr) returned 0";
}

// The same through tcp;ofi_rxm: an application MR of the RDM domain.
TEST(IsoRxmAppMr, CloseDuringInflightWriteStopsIt)
{
	InfoPtr info(harness::rdm_info(FI_MSG | FI_TAGGED | kRmaCaps));
	if (!info)
		GTEST_SKIP() << "tcp;ofi_rxm unavailable";
	harness::RdmPair pair(info.get());
	ASSERT_TRUE(pair.ok);
	close_during_write(pair.a, pair.a.ep, pair.b_at_a, pair.b, pair.b.domain);
}

}  // namespace
