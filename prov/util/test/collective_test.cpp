// util::coll::Group over a simulated network: every algorithm on 1..9 members with every
// root, several collectives in flight with messages delivered in random order, transports
// that refuse sends for a while, and members that send what they must not.
#include "prov/util/collective.h"

#include <gtest/gtest.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <random>
#include <vector>

namespace {

using util::coll::Done;
using util::coll::Group;

int reduce_sum_i64(int op, int datatype, void *inout, const void *in, size_t count)
{
	if (op != FI_SUM || datatype != FI_INT64)
		return -FI_EOPNOTSUPP;
	auto *a = static_cast<int64_t *>(inout);
	const auto *b = static_cast<const int64_t *>(in);
	for (size_t i = 0; i < count; ++i)
		a[i] += b[i];
	return 0;
}

struct Message {
	size_t from, to;
	uint64_t seq;
	uint32_t step;
	std::vector<uint8_t> payload;
};

class Network;

class SimTransport : public util::coll::Transport {
public:
	SimTransport(Network &net, size_t me) : net_(net), me_(me) {}
	int send(size_t rank, uint64_t seq, uint32_t step,
		 std::span<const uint8_t> payload) override;
	int refuse = 0;  // sends to refuse with -FI_EAGAIN first

private:
	Network &net_;
	size_t me_;
};

class Network {
public:
	explicit Network(size_t n, unsigned seed = 1, size_t max_message = SIZE_MAX) : rng(seed)
	{
		for (size_t i = 0; i < n; ++i)
			transports.push_back(std::make_unique<SimTransport>(*this, i));
		for (size_t i = 0; i < n; ++i)
			groups.push_back(std::make_unique<Group>(n, i, *transports[i],
								 reduce_sum_i64, max_message));
	}
	// Delivers queued messages in random order until none is left; returns how many.
	size_t run()
	{
		size_t delivered = 0;
		for (int idle = 0; idle < 3;) {
			for (auto &g : groups)
				g->progress();
			if (wire.empty()) {
				++idle;
				continue;
			}
			idle = 0;
			std::uniform_int_distribution<size_t> pick(0, wire.size() - 1);
			size_t i = pick(rng);
			Message m = std::move(wire[i]);
			wire.erase(wire.begin() + static_cast<long>(i));
			groups[m.to]->deliver(m.from, m.seq, m.step, m.payload);
			++delivered;
		}
		return delivered;
	}
	// Every member finished exactly 'count' collectives, all with 'status'.
	void expect_done(size_t count, int status = 0)
	{
		for (size_t r = 0; r < groups.size(); ++r) {
			Done d{};
			size_t got = 0;
			while (groups[r]->pop_done(&d)) {
				EXPECT_EQ(d.status, status) << "rank " << r;
				EXPECT_EQ(d.context, reinterpret_cast<void *>(got + 1)) << "rank " << r;
				++got;
			}
			EXPECT_EQ(got, count) << "rank " << r;
		}
	}
	static void *ctx(size_t i) { return reinterpret_cast<void *>(i); }

	std::mt19937 rng;
	std::vector<std::unique_ptr<SimTransport>> transports;
	std::vector<std::unique_ptr<Group>> groups;
	std::vector<Message> wire;
	size_t sends = 0;
	size_t largest = 0;  // the largest payload sent
};

int SimTransport::send(size_t rank, uint64_t seq, uint32_t step, std::span<const uint8_t> payload)
{
	if (refuse > 0) {
		--refuse;
		return -FI_EAGAIN;
	}
	net_.wire.push_back({me_, rank, seq, step, {payload.begin(), payload.end()}});
	++net_.sends;
	net_.largest = std::max(net_.largest, payload.size());
	return 0;
}

TEST(Collective, EveryAlgorithmEverySizeEveryRoot)
{
	for (size_t n = 1; n <= 9; ++n) {
		for (size_t root = 0; root < n; ++root) {
			SCOPED_TRACE("members " + std::to_string(n) + " root " + std::to_string(root));
			Network net(n, static_cast<unsigned>(n * 31 + root));
			constexpr size_t kCount = 5;
			std::vector<std::vector<int64_t>> bcast(n), src(n), sum(n), gathered(n),
				scatter_src(n), scattered(n);
			for (size_t r = 0; r < n; ++r) {
				bcast[r].assign(kCount, r == root ? 1000 + static_cast<int64_t>(root) : -1);
				src[r].resize(kCount);
				for (size_t i = 0; i < kCount; ++i)
					src[r][i] = static_cast<int64_t>(r * 10 + i);
				sum[r].assign(kCount, -7);
				gathered[r].assign(n * kCount, -7);
				scatter_src[r].resize(n * kCount);
				std::iota(scatter_src[r].begin(), scatter_src[r].end(),
					  r == root ? 5000 : -100000);
				scattered[r].assign(kCount, -7);
			}
			const size_t bytes = kCount * sizeof(int64_t);
			// Everyone issues all five before any message moves: peers run ahead.
			for (size_t r = 0; r < n; ++r) {
				Group &g = *net.groups[r];
				ASSERT_EQ(g.barrier(Network::ctx(1)), 0);
				ASSERT_EQ(g.broadcast(bcast[r].data(), bytes, root, Network::ctx(2)), 0);
				ASSERT_EQ(g.allreduce(src[r].data(), sum[r].data(), kCount,
						      sizeof(int64_t), FI_INT64, FI_SUM, Network::ctx(3)), 0);
				ASSERT_EQ(g.allgather(src[r].data(), gathered[r].data(), bytes,
						      Network::ctx(4)), 0);
				ASSERT_EQ(g.scatter(scatter_src[r].data(), scattered[r].data(), bytes,
						    root, Network::ctx(5)), 0);
			}
			net.run();
			net.expect_done(5);
			for (size_t r = 0; r < n; ++r) {
				for (size_t i = 0; i < kCount; ++i) {
					EXPECT_EQ(bcast[r][i], 1000 + static_cast<int64_t>(root));
					int64_t expect = 0;
					for (size_t q = 0; q < n; ++q)
						expect += static_cast<int64_t>(q * 10 + i);
					EXPECT_EQ(sum[r][i], expect);
					EXPECT_EQ(scattered[r][i],
						  static_cast<int64_t>(5000 + r * kCount + i));
				}
				for (size_t q = 0; q < n; ++q)
					for (size_t i = 0; i < kCount; ++i)
						EXPECT_EQ(gathered[r][q * kCount + i],
							  static_cast<int64_t>(q * 10 + i));
			}
		}
	}
}

// A transport whose messages hold at most 24 bytes (3 elements): every payload travels in
// chunks, the last one short, and arrives where it belongs in whatever order.
TEST(Collective, LargePayloadsTravelInChunks)
{
	constexpr size_t kMax = 24, kCount = 10;  // 80 bytes per member: 4 chunks
	for (size_t n : {2, 3, 5, 8}) {
		SCOPED_TRACE("members " + std::to_string(n));
		const size_t root = n - 1;
		Network net(n, static_cast<unsigned>(n), kMax);
		std::vector<std::vector<int64_t>> bcast(n), src(n), sum(n), gathered(n),
			scatter_src(n), scattered(n);
		for (size_t r = 0; r < n; ++r) {
			bcast[r].resize(kCount, -1);
			if (r == root)
				std::iota(bcast[r].begin(), bcast[r].end(), 300);
			src[r].resize(kCount);
			std::iota(src[r].begin(), src[r].end(), static_cast<int64_t>(r * 100));
			sum[r].assign(kCount, -7);
			gathered[r].assign(n * kCount, -7);
			scatter_src[r].resize(n * kCount);
			std::iota(scatter_src[r].begin(), scatter_src[r].end(), 5000);
			scattered[r].assign(kCount, -7);
		}
		const size_t bytes = kCount * sizeof(int64_t);
		for (size_t r = 0; r < n; ++r) {
			Group &g = *net.groups[r];
			ASSERT_EQ(g.broadcast(bcast[r].data(), bytes, root, Network::ctx(1)), 0);
			ASSERT_EQ(g.allreduce(src[r].data(), sum[r].data(), kCount, sizeof(int64_t),
					      FI_INT64, FI_SUM, Network::ctx(2)), 0);
			ASSERT_EQ(g.allgather(src[r].data(), gathered[r].data(), bytes,
					      Network::ctx(3)), 0);
			ASSERT_EQ(g.scatter(scatter_src[r].data(), scattered[r].data(), bytes, root,
					    Network::ctx(4)), 0);
		}
		net.run();
		net.expect_done(4);
		EXPECT_EQ(net.largest, kMax);
		for (size_t r = 0; r < n; ++r)
			for (size_t i = 0; i < kCount; ++i) {
				EXPECT_EQ(bcast[r][i], static_cast<int64_t>(300 + i));
				int64_t expect = 0;
				for (size_t q = 0; q < n; ++q)
					expect += static_cast<int64_t>(q * 100 + i);
				EXPECT_EQ(sum[r][i], expect);
				EXPECT_EQ(scattered[r][i], static_cast<int64_t>(5000 + r * kCount + i));
				for (size_t q = 0; q < n; ++q)
					EXPECT_EQ(gathered[r][q * kCount + i],
						  static_cast<int64_t>(q * 100 + i));
			}
	}
}

TEST(Collective, ChunksHoldWholeElements)
{
	// 12-byte messages hold one int64 of a reduction (not one and a half), and an element
	// larger than a message cannot travel at all.
	Network net(3, 1, 12);
	std::vector<int64_t> in(9, 2), out(9, 0);
	for (size_t r = 0; r < 3; ++r)
		ASSERT_EQ(net.groups[r]->allreduce(&in[r * 3], &out[r * 3], 3, sizeof(int64_t),
						   FI_INT64, FI_SUM, Network::ctx(1)), 0);
	net.run();
	net.expect_done(1);
	EXPECT_EQ(net.largest, sizeof(int64_t));
	for (int64_t v : out)
		EXPECT_EQ(v, 6);
	Network tiny(2, 1, 4);
	int64_t x = 1, y = 0;
	EXPECT_EQ(tiny.groups[0]->allreduce(&x, &y, 1, sizeof(x), FI_INT64, FI_SUM, nullptr),
		  -FI_EMSGSIZE);
}

TEST(Collective, MessagesGrowLogarithmically)
{
	// A barrier on 64 members: each sends log2(64) = 6 messages, not 63 (and not 2 * 63
	// through one rank).
	Network net(64);
	for (auto &g : net.groups)
		ASSERT_EQ(g->barrier(Network::ctx(1)), 0);
	net.run();
	net.expect_done(1);
	EXPECT_EQ(net.sends, 64u * 6);

	// Allreduce: a reduce tree and a broadcast tree, n - 1 messages each.
	Network sum(64);
	std::vector<int64_t> in(64, 1), out(64, 0);
	for (size_t r = 0; r < 64; ++r)
		ASSERT_EQ(sum.groups[r]->allreduce(&in[r], &out[r], 1, sizeof(int64_t), FI_INT64,
						   FI_SUM, Network::ctx(1)),
			  0);
	sum.run();
	sum.expect_done(1);
	EXPECT_EQ(sum.sends, 2u * 63);
	for (int64_t v : out)
		EXPECT_EQ(v, 64);
}

TEST(Collective, RefusedSendsAreRetried)
{
	Network net(5);
	for (auto &t : net.transports)
		t->refuse = 3;
	std::vector<int64_t> in{1, 2, 3, 4, 5}, out(5, 0);
	for (size_t r = 0; r < 5; ++r)
		ASSERT_EQ(net.groups[r]->allreduce(&in[r], &out[r], 1, sizeof(int64_t), FI_INT64,
						   FI_SUM, Network::ctx(1)),
			  0);
	net.run();
	net.expect_done(1);
	for (int64_t v : out)
		EXPECT_EQ(v, 15);
}

TEST(Collective, BadArgumentsAreRefused)
{
	Network net(4);
	Group &g = *net.groups[1];
	int64_t x = 0;
	EXPECT_EQ(g.broadcast(&x, sizeof(x), 4, nullptr), -FI_EINVAL);  // root out of range
	EXPECT_EQ(g.broadcast(nullptr, sizeof(x), 0, nullptr), -FI_EINVAL);
	EXPECT_EQ(g.scatter(&x, &x, SIZE_MAX / 2, 0, nullptr), -FI_EINVAL);  // overflow
	EXPECT_EQ(g.allreduce(&x, &x, SIZE_MAX / 4, 8, FI_INT64, FI_SUM, nullptr), -FI_EINVAL);
	EXPECT_EQ(g.allreduce(&x, &x, 1, 0, FI_INT64, FI_SUM, nullptr), -FI_EINVAL);
	Done d{};
	EXPECT_FALSE(g.pop_done(&d));  // refused calls complete nothing
}

// A member that misbehaves fails the group: running and queued collectives complete with
// -FI_EIO, later ones too, and nothing is written past the buffers.
class HostileMember : public ::testing::Test {
protected:
	void start_allreduce()
	{
		for (size_t r = 0; r < 3; ++r) {
			ASSERT_EQ(net.groups[r]->allreduce(&in[r], &out[r], 1, sizeof(int64_t),
							   FI_INT64, FI_SUM, Network::ctx(1)),
				  0);
			ASSERT_EQ(net.groups[r]->barrier(Network::ctx(2)), 0);
		}
	}
	void expect_rank0_failed()
	{
		EXPECT_TRUE(net.groups[0]->failed());
		Done d{};
		size_t failed = 0;
		while (net.groups[0]->pop_done(&d)) {
			EXPECT_EQ(d.status, -FI_EIO);
			++failed;
		}
		EXPECT_EQ(failed, 2u);
		// Later collectives fail at once.
		EXPECT_EQ(net.groups[0]->barrier(Network::ctx(3)), 0);
		ASSERT_TRUE(net.groups[0]->pop_done(&d));
		EXPECT_EQ(d.status, -FI_EIO);
	}
	Network net{3};
	std::vector<int64_t> in{1, 2, 3}, out{0, 0, 0};
};

TEST_F(HostileMember, WrongLength)
{
	start_allreduce();
	uint8_t big[64] = {};
	net.groups[0]->deliver(1, 0, 0, big);  // rank 1's partial is 8 bytes
	expect_rank0_failed();
}

TEST_F(HostileMember, UnexpectedStepOrSender)
{
	start_allreduce();
	int64_t v = 5;
	std::span<const uint8_t> bytes(reinterpret_cast<uint8_t *>(&v), sizeof(v));
	net.groups[0]->deliver(1, 0, 7, bytes);  // no such step in this collective
	expect_rank0_failed();

	Network other(3);
	other.groups[0]->barrier(Network::ctx(1));
	other.groups[0]->deliver(0, 0, 0, {});  // "from" ourselves
	EXPECT_TRUE(other.groups[0]->failed());
	Network third(3);
	third.groups[0]->barrier(Network::ctx(1));
	third.groups[0]->deliver(9, 0, 0, {});  // not a member
	EXPECT_TRUE(third.groups[0]->failed());
}

TEST_F(HostileMember, DuplicateAndStale)
{
	start_allreduce();
	int64_t v = 5;
	std::span<const uint8_t> bytes(reinterpret_cast<uint8_t *>(&v), sizeof(v));
	net.groups[0]->deliver(1, 0, 0, bytes);
	EXPECT_FALSE(net.groups[0]->failed());
	net.groups[0]->deliver(1, 0, 0, bytes);  // the same partial again
	expect_rank0_failed();
}

TEST_F(HostileMember, FloodOfEarlyMessages)
{
	start_allreduce();
	for (size_t i = 0; i <= Group::kMaxEarly && !net.groups[0]->failed(); ++i)
		net.groups[0]->deliver(1, 1000 + i, 0, {});  // collectives far ahead
	expect_rank0_failed();
}

TEST(Collective, HeldMessageThatMatchesNothingFailsTheGroup)
{
	Network net(2);
	// Rank 0 has not issued anything; rank 1 sends a barrier message with a wrong step.
	net.groups[0]->deliver(1, 0, 5, {});
	EXPECT_FALSE(net.groups[0]->failed());
	net.groups[0]->barrier(Network::ctx(1));
	net.groups[1]->barrier(Network::ctx(1));
	net.run();
	EXPECT_TRUE(net.groups[0]->failed());
}

} // namespace

namespace {

TEST(Collective, WaitingOnTellsWhoseMessagesAreStillNeeded)
{
	// Barrier on 3: rank 0 hears from rank 2 (distance 1), then from rank 1 (distance 2).
	Network net(3);
	Group &g = *net.groups[0];
	EXPECT_FALSE(g.waiting_on(1));  // nothing issued
	ASSERT_EQ(g.barrier(Network::ctx(1)), 0);
	EXPECT_TRUE(g.waiting_on(2));
	EXPECT_TRUE(g.waiting_on(1));
	g.deliver(1, 0, 1, {});  // rank 1's round-1 message, early: held
	EXPECT_FALSE(g.waiting_on(1));
	EXPECT_TRUE(g.waiting_on(2));
	g.deliver(2, 0, 0, {});
	EXPECT_FALSE(g.waiting_on(2));
	Done d{};
	ASSERT_TRUE(g.pop_done(&d));
	EXPECT_EQ(d.status, 0);
}

} // namespace
