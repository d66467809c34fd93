// Messages consumed in the ring (prov/util/rx_inplace_ops.h): a one-slot message is offered
// where it lies before it takes a receive; taken, it uses no receive and writes no CQ entry;
// declined, it takes the oldest receive as always (or waits for one). A longer message is
// offered in pieces (one per slot) once all its slots are in the ring; messages with remote
// CQ data are never offered.
#include "prov/shm/shm_ring.h"
#include "prov/shm/test/shm_test_pair.h"
#include "prov/util/rx_inplace_ops.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using shm_test::ShmPair;

struct Consumer {
	int take = 1;       // what consume returns
	int take_pieces = 0; // ... for a message in pieces
	int offered = 0;
	int shown = 0;        // offers of messages without a contiguous copy (msg NULL)
	size_t shown_len = 0;
	std::string bytes;  // the last message offered
	void *rx_context = nullptr;
	std::vector<size_t> piece_lens; // of the last message offered in pieces
	std::vector<std::string> taken; // every message taken, in order

	static int consume(void *arg, const ofi_rx_inplace_request *req)
	{
		auto *c = static_cast<Consumer *>(arg);
		c->offered++;
		if (!req->msg && req->piece_count) {
			c->shown++;
			c->shown_len = req->len;
			c->rx_context = req->rx_context;
			c->bytes.clear();
			c->piece_lens.clear();
			for (size_t i = 0; i < req->piece_count; i++) {
				c->bytes.append(static_cast<const char *>(req->pieces[i].iov_base),
						req->pieces[i].iov_len);
				c->piece_lens.push_back(req->pieces[i].iov_len);
			}
			if (c->take_pieces)
				c->taken.push_back(c->bytes);
			return c->take_pieces;
		}
		if (!req->msg) {
			c->shown++;
			c->shown_len = req->len;
			c->rx_context = req->rx_context;
			return c->take; // ignored: it cannot be taken
		}
		c->bytes.assign(static_cast<const char *>(req->msg), req->len);
		c->rx_context = req->rx_context;
		if (c->take)
			c->taken.push_back(c->bytes);
		return c->take;
	}
};

class ShmInPlace : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(p.open());
		ASSERT_TRUE(p.connect());
		ASSERT_EQ(0, fi_open_ops(&p.domain->fid, OFI_RX_INPLACE_OPS_NAME, 0,
					 reinterpret_cast<void **>(&ops), nullptr));
		ASSERT_EQ(0, ops->set_consumer(p.server, Consumer::consume, &consumer));
	}
	void sent()
	{
		fi_cq_data_entry e{};
		ASSERT_EQ(1, p.wait_cq(p.client_cq, &e));
	}
	ShmPair p;
	ofi_rx_inplace_ops *ops = nullptr;
	Consumer consumer;
};

TEST_F(ShmInPlace, TakenMessageUsesNoReceiveAndNoCompletion)
{
	ASSERT_EQ(0, fi_send(p.client, "hello", 6, nullptr, 0, nullptr));
	sent();
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 50));
	EXPECT_EQ(1, consumer.offered);
	EXPECT_EQ(std::string("hello", 6), consumer.bytes);
	EXPECT_EQ(nullptr, consumer.rx_context); // nothing posted: taken all the same
	// A receive posted now is still there for the next message, declined.
	char in[16] = {};
	int rctx;
	ASSERT_EQ(0, fi_recv(p.server, in, sizeof(in), nullptr, 0, &rctx));
	consumer.take = 0;
	ASSERT_EQ(0, fi_send(p.client, "world", 6, nullptr, 0, nullptr));
	fi_cq_data_entry e{};
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(&rctx, consumer.rx_context);
	EXPECT_STREQ("world", in);
	EXPECT_EQ(2, consumer.offered);
}

TEST_F(ShmInPlace, DeclinedWithoutReceiveWaitsAndIsOfferedAgain)
{
	consumer.take = 0;
	ASSERT_EQ(0, fi_send(p.client, "abc", 4, nullptr, 0, nullptr));
	sent();
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 50));
	int seen = consumer.offered;
	EXPECT_GE(seen, 1);
	consumer.take = 1;
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 50));
	EXPECT_GT(consumer.offered, seen);
	EXPECT_EQ(std::string("abc", 4), consumer.bytes);
}

TEST_F(ShmInPlace, LongMessagesAndRemoteDataAreShownButNotTaken)
{
	// The consumer would take them, but it sees no bytes: they take their receives, and
	// it learns which (a consumer keeps later messages behind them so).
	std::vector<uint8_t> big(5000, 7), in(5000);
	char small[8] = {};
	int big_ctx, small_ctx;
	ASSERT_EQ(0, fi_recv(p.server, in.data(), in.size(), nullptr, 0, &big_ctx));
	ASSERT_EQ(0, fi_recv(p.server, small, sizeof(small), nullptr, 0, &small_ctx));
	ASSERT_EQ(0, fi_send(p.client, big.data(), big.size(), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_senddata(p.client, "cq", 3, nullptr, 42, 0, nullptr));
	fi_cq_data_entry e{};
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_EQ(&big_ctx, e.op_context);
	EXPECT_EQ(5000u, e.len);
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_EQ(&small_ctx, e.op_context);
	EXPECT_EQ(42u, e.data);
	EXPECT_EQ(2, consumer.shown);
	EXPECT_EQ(consumer.offered, consumer.shown);
	EXPECT_EQ(3u, consumer.shown_len);
	EXPECT_EQ(&small_ctx, consumer.rx_context);
	EXPECT_EQ(big, in);
}

TEST_F(ShmInPlace, MultiSlotMessagesAreTakenInPiecesInOrder)
{
	// Two messages over several slots among one-slot ones, all in the ring before the
	// receiver's pass: each long one is offered once, in pieces of one slot each, intact,
	// and taken in its place in the order (no receive, no CQ entry, every slot freed).
	consumer.take_pieces = 1;
	std::string big1(shm::kSlotPayload * 2 + 100, '\0'), big2(shm::kSlotPayload * 4, '\0');
	for (size_t i = 0; i < big1.size(); i++)
		big1[i] = static_cast<char>('a' + i % 23);
	for (size_t i = 0; i < big2.size(); i++)
		big2[i] = static_cast<char>('A' + i % 19);
	const std::string msgs[] = {"one", big1, "two", big2, "three"};
	for (const std::string &m : msgs) {
		ASSERT_EQ(0, fi_send(p.client, m.data(), m.size(), nullptr, 0, nullptr));
		sent();
	}
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 50));
	ASSERT_EQ(5u, consumer.taken.size());
	for (size_t i = 0; i < 5; i++)
		EXPECT_TRUE(consumer.taken[i] == msgs[i]) << "message " << i;
	EXPECT_EQ(5, consumer.offered);
	EXPECT_EQ((std::vector<size_t>{shm::kSlotPayload, shm::kSlotPayload, shm::kSlotPayload,
				       shm::kSlotPayload}),
		  consumer.piece_lens);
	// The next message takes a posted receive as always: the ring is in step.
	consumer.take = 0;
	char in[8] = {};
	ASSERT_EQ(0, fi_recv(p.server, in, sizeof(in), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_send(p.client, "four", 5, nullptr, 0, nullptr));
	fi_cq_data_entry e{};
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_STREQ("four", in);
}

TEST_F(ShmInPlace, DeclinedPiecesTakeTheirReceive)
{
	consumer.take_pieces = 0;
	std::vector<uint8_t> big(shm::kSlotPayload + 1, 9), in(big.size());
	int ctx;
	ASSERT_EQ(0, fi_recv(p.server, in.data(), in.size(), nullptr, 0, &ctx));
	ASSERT_EQ(0, fi_send(p.client, big.data(), big.size(), nullptr, 0, nullptr));
	fi_cq_data_entry e{};
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_EQ(&ctx, e.op_context);
	EXPECT_EQ(&ctx, consumer.rx_context);
	EXPECT_EQ(big, in);
	EXPECT_EQ(2u, consumer.piece_lens.size());
}

TEST_F(ShmInPlace, RemovedConsumerIsNotCalled)
{
	ASSERT_EQ(0, ops->set_consumer(p.server, nullptr, nullptr));
	char in[8] = {};
	ASSERT_EQ(0, fi_recv(p.server, in, sizeof(in), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_send(p.client, "x", 2, nullptr, 0, nullptr));
	fi_cq_data_entry e{};
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &e));
	EXPECT_EQ(0, consumer.offered);
	EXPECT_EQ(-FI_EINVAL, ops->set_consumer(nullptr, Consumer::consume, &consumer));
}

} // namespace
