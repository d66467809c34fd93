// Placing by the header (prov/util/rx_place_ops.h) on a shared receive queue: every message
// is offered to the placer first, with its head; a message it takes goes whole into the
// placer's buffers and completes with the placer's context, leaving the shared receives
// alone; a declined one takes the next shared receive; a message taken and cut off by the end
// of the stream completes with FI_ECANCELED.
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/test/tcp_sink_pair.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <cstring>
#include <vector>

using namespace tcp;

namespace {

constexpr size_t kHead = 8;

// Takes messages whose head starts with 'T' into one buffer of its own.
struct Placer {
	std::vector<uint8_t> buffer = std::vector<uint8_t>(64 * 1024);
	int context = 0; // its address is the completion's context
	int offers = 0, taken = 0, without_head = 0;
	std::vector<void *> declined_to;

	static int place(void *arg, ofi_rx_place_request *req)
	{
		auto *self = static_cast<Placer *>(arg);
		self->offers++;
		if (!req->head) {
			self->without_head++;
			self->declined_to.push_back(req->rx_context);
			return 0;
		}
		if (!req->may_take || static_cast<const char *>(req->head)[0] != 'T' ||
		    req->msg_len > self->buffer.size()) {
			self->declined_to.push_back(req->rx_context);
			return 0;
		}
		self->taken++;
		// Two pieces, to see the message follow the iov list.
		req->iov[0] = {self->buffer.data(), kHead};
		req->iov[1] = {self->buffer.data() + kHead, self->buffer.size() - kHead};
		req->iov_count = 2;
		req->context = &self->context;
		return 1;
	}
};

struct PlacePair : tcp_test::SinkPair {
	PlacePair() : SinkPair(1 << 20)
	{
		queue.placer = RxPlacer{&Placer::place, &placer, kHead};
		b->use_shared_rx(&queue);
	}
	int send(const std::vector<uint8_t> &bytes)
	{
		iovec iov{const_cast<uint8_t *>(bytes.data()), bytes.size()};
		PostArgs args;
		args.iov = &iov;
		args.count = 1;
		args.op_flags = FI_COMPLETION;
		return a->post_msg(args);
	}
	RxQueue queue{8};
	Placer placer;
};

std::vector<uint8_t> message(char kind, size_t len)
{
	std::vector<uint8_t> v(len);
	for (size_t i = 0; i < len; i++)
		v[i] = static_cast<uint8_t>(i * 31 + 5);
	v[0] = static_cast<uint8_t>(kind);
	return v;
}

} // namespace

TEST(ConnectionPlace, TakenMessagesGoToThePlacerDeclinedOnesToTheSharedReceive)
{
	PlacePair p;
	std::vector<uint8_t> shared(64 * 1024);
	iovec r{shared.data(), shared.size()};
	ASSERT_EQ(0, p.queue.post(&r, 1, shared.data(), FI_COMPLETION));

	std::vector<uint8_t> taken = message('T', 20000), declined = message('D', 3000);
	ASSERT_EQ(0, p.send(taken));
	ASSERT_EQ(0, p.send(declined));
	while (p.ob.received.size() < 2 && p.b->progress_rx()) {
	}
	ASSERT_EQ(2u, p.ob.received.size());
	EXPECT_EQ(&p.placer.context, p.ob.received[0]);
	EXPECT_EQ(taken.size(), p.ob.lengths[0]);
	EXPECT_EQ(0, memcmp(taken.data(), p.placer.buffer.data(), taken.size()));
	EXPECT_EQ(shared.data(), p.ob.received[1]);
	EXPECT_EQ(declined.size(), p.ob.lengths[1]);
	EXPECT_EQ(0, memcmp(declined.data(), shared.data(), declined.size()));
	EXPECT_EQ(2, p.placer.offers);
	EXPECT_EQ(1, p.placer.taken);
	ASSERT_EQ(1u, p.placer.declined_to.size());
	EXPECT_EQ(shared.data(), p.placer.declined_to[0]) << "told which receive it takes";
	EXPECT_EQ(0, p.ob.errors + p.ob.lost);
}

TEST(ConnectionPlace, ATakenMessageNeedsNoSharedReceive)
{
	PlacePair p; // nothing posted to the shared queue
	std::vector<uint8_t> taken = message('T', 5000);
	ASSERT_EQ(0, p.send(taken));
	while (p.ob.received.empty() && p.b->progress_rx()) {
	}
	ASSERT_EQ(1u, p.ob.received.size());
	EXPECT_EQ(&p.placer.context, p.ob.received[0]);
	EXPECT_EQ(0, memcmp(taken.data(), p.placer.buffer.data(), taken.size()));
}

TEST(ConnectionPlace, ATakenMessageCutOffByTheStreamEndIsCancelled)
{
	PlacePair p;
	// A header announcing 40000 bytes and only the first 1000 of them, written to the
	// socket as a peer would: the stream then ends before the rest.
	std::vector<uint8_t> bytes(kWireHeaderSize + 1000);
	WireHeader h;
	h.op = WireOp::msg;
	h.size = 40000;
	encode_header(h, bytes.data());
	std::vector<uint8_t> head = message('T', 1000);
	memcpy(bytes.data() + kWireHeaderSize, head.data(), head.size());
	ASSERT_EQ(static_cast<ssize_t>(bytes.size()),
		  ::send(p.fds[0], bytes.data(), bytes.size(), MSG_DONTWAIT));
	p.b->progress_rx();
	ASSERT_TRUE(p.ob.received.empty());
	ASSERT_EQ(1, p.placer.taken);
	p.b->stop();
	ASSERT_EQ(1u, p.ob.received.size());
	EXPECT_EQ(&p.placer.context, p.ob.received[0]);
	EXPECT_EQ(1, p.ob.errors);
}
