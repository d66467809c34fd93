// Messages consumed in the read stage (prov/util/rx_inplace_ops.h): every message is shown to
// the consumer first; one lying whole in the stage comes with its bytes and, taken, uses no
// receive and makes no completion; a declined one goes on to the placer or a receive as
// before; one that cannot be taken (longer than the stage, remote CQ data) comes without
// bytes; a delivery-complete sender still gets its ack.
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/test/tcp_sink_pair.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace tcp;

namespace {

// Takes messages starting with 'T' (a copy of their bytes kept), declines the others.
struct Consumer {
	std::vector<std::string> taken;
	std::vector<size_t> offered_len;
	std::vector<bool> offered_whole;
	std::vector<void *> told_receive;

	static int consume(void *arg, const ofi_rx_inplace_request *req)
	{
		auto *self = static_cast<Consumer *>(arg);
		self->offered_len.push_back(req->len);
		self->offered_whole.push_back(req->msg != nullptr);
		self->told_receive.push_back(req->rx_context);
		if (!req->msg || req->len == 0 || static_cast<const char *>(req->msg)[0] != 'T')
			return 0;
		self->taken.emplace_back(static_cast<const char *>(req->msg), req->len);
		return 1;
	}
};

struct InplacePair : tcp_test::SinkPair {
	InplacePair() : SinkPair(1 << 20) { b->set_consumer(&Consumer::consume, &consumer); }
	int send(const std::string &bytes, bool want_ack = false, bool cq_data = false)
	{
		iovec iov{const_cast<char *>(bytes.data()), bytes.size()};
		PostArgs args;
		args.iov = &iov;
		args.count = 1;
		args.context = &sent_context;
		args.op_flags = FI_COMPLETION | (cq_data ? FI_REMOTE_CQ_DATA : 0);
		args.data = 7;
		args.want_ack = want_ack;
		return a->post_msg(args);
	}
	void drain(size_t completions)
	{
		for (int i = 0; i < 100 && ob.received.size() < completions; i++)
			b->progress_rx();
	}
	Consumer consumer;
	int sent_context = 0;
};

std::string message(char kind, size_t len)
{
	std::string s(len, 'x');
	for (size_t i = 1; i < len; i++)
		s[i] = static_cast<char>('a' + i % 26);
	s[0] = kind;
	return s;
}

} // namespace

TEST(ConnectionInplace, ATakenMessageUsesNoReceiveAndMakesNoCompletion)
{
	InplacePair p;
	std::vector<char> buf(4096);
	iovec r{buf.data(), buf.size()};
	ASSERT_EQ(0, p.b->post_recv(&r, 1, buf.data(), FI_COMPLETION));

	std::string taken = message('T', 64), declined = message('D', 100);
	ASSERT_EQ(0, p.send(taken));
	ASSERT_EQ(0, p.send(declined));
	p.drain(1);
	ASSERT_EQ(1u, p.consumer.taken.size());
	EXPECT_EQ(taken, p.consumer.taken[0]) << "the message's bytes, where they lie";
	ASSERT_EQ(1u, p.ob.received.size()) << "only the declined one completes";
	EXPECT_EQ(buf.data(), p.ob.received[0]) << "the receive was left for it";
	EXPECT_EQ(declined.size(), p.ob.lengths[0]);
	EXPECT_EQ(0, memcmp(declined.data(), buf.data(), declined.size()));
	ASSERT_EQ(2u, p.consumer.told_receive.size());
	EXPECT_EQ(buf.data(), p.consumer.told_receive[0]) << "told which receive it would take";
	EXPECT_EQ(buf.data(), p.consumer.told_receive[1]);
	EXPECT_EQ(0, p.ob.errors + p.ob.lost);
}

TEST(ConnectionInplace, AMessageIsTakenWithNoReceivePosted)
{
	InplacePair p;
	std::string taken = message('T', 200);
	ASSERT_EQ(0, p.send(taken));
	p.b->progress_rx();
	ASSERT_EQ(1u, p.consumer.taken.size());
	EXPECT_EQ(taken, p.consumer.taken[0]);
	EXPECT_EQ(nullptr, p.consumer.told_receive[0]);
	EXPECT_TRUE(p.ob.received.empty());
}

TEST(ConnectionInplace, ADeclinedMessageWaitsForAReceiveAndIsShownAgain)
{
	InplacePair p;
	std::string declined = message('D', 50), taken = message('T', 60);
	ASSERT_EQ(0, p.send(declined));
	ASSERT_EQ(0, p.send(taken));
	p.b->progress_rx();
	EXPECT_TRUE(p.ob.received.empty()) << "nothing to put it in";
	EXPECT_TRUE(p.consumer.taken.empty()) << "the next message stays behind it";
	std::vector<char> buf(256);
	iovec r{buf.data(), buf.size()};
	ASSERT_EQ(0, p.b->post_recv(&r, 1, buf.data(), FI_COMPLETION));
	p.drain(1);
	ASSERT_EQ(1u, p.ob.received.size());
	EXPECT_EQ(0, memcmp(declined.data(), buf.data(), declined.size()));
	ASSERT_EQ(1u, p.consumer.taken.size());
	EXPECT_EQ(taken, p.consumer.taken[0]);
	EXPECT_GE(p.consumer.offered_len.size(), 3u) << "the waiting one was shown again";
}

TEST(ConnectionInplace, MessagesThatCannotBeTakenComeWithoutTheirBytes)
{
	InplacePair p;
	std::vector<char> buf(64 * 1024);
	iovec r[2] = {{buf.data(), 32 * 1024}, {buf.data() + 32 * 1024, 32 * 1024}};
	ASSERT_EQ(0, p.b->post_recv(&r[0], 1, r[0].iov_base, FI_COMPLETION));
	ASSERT_EQ(0, p.b->post_recv(&r[1], 1, r[1].iov_base, FI_COMPLETION));
	std::string large = message('T', 20000); // longer than the stage
	std::string with_data = message('T', 64);
	ASSERT_EQ(0, p.send(large));
	ASSERT_EQ(0, p.send(with_data, false, true));
	p.drain(2);
	ASSERT_EQ(2u, p.ob.received.size()) << "both went to the receives";
	EXPECT_TRUE(p.consumer.taken.empty());
	ASSERT_EQ(2u, p.consumer.offered_len.size());
	EXPECT_EQ(large.size(), p.consumer.offered_len[0]) << "its length all the same";
	EXPECT_FALSE(p.consumer.offered_whole[0]);
	EXPECT_FALSE(p.consumer.offered_whole[1]);
	EXPECT_EQ(0, memcmp(large.data(), r[0].iov_base, large.size()));
	EXPECT_EQ(0, p.ob.errors + p.ob.lost);
}

TEST(ConnectionInplace, ADeliveryCompleteSenderIsAckedForATakenMessage)
{
	InplacePair p;
	ASSERT_EQ(0, p.send(message('T', 64), true));
	p.b->progress_rx();
	ASSERT_EQ(1u, p.consumer.taken.size());
	for (int i = 0; i < 100 && p.oa.sent.empty(); i++)
		p.a->progress_rx();
	ASSERT_EQ(1u, p.oa.sent.size()) << "the sender completes once the ack is back";
	EXPECT_EQ(0, p.oa.errors);
}

TEST(ConnectionInplace, WithoutAConsumerNothingIsShown)
{
	InplacePair p;
	p.b->set_consumer(nullptr, &p.consumer);
	std::vector<char> buf(256);
	iovec r{buf.data(), buf.size()};
	ASSERT_EQ(0, p.b->post_recv(&r, 1, buf.data(), FI_COMPLETION));
	ASSERT_EQ(0, p.send(message('T', 64)));
	p.drain(1);
	EXPECT_TRUE(p.consumer.offered_len.empty());
	EXPECT_EQ(1u, p.ob.received.size());
}
