// The data stream engine over a socketpair, without endpoints: framing, partial transfers,
// matching, truncation, multi-receive, RMA checks and protocol violations.
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/tcp_wire.h"

#include <rdma/fi_errno.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

using namespace tcp;

namespace {

struct Completion {
	void *context;
	uint64_t flags;
	void *buf;
	size_t len;
	uint64_t data;
	int err;
	size_t olen;
};

struct Region {
	uint8_t *base;
	size_t len;
	uint64_t access;
};

class FakeOwner : public ConnectionOwner {
public:
	void tx_done(void *context, uint64_t, uint64_t flags, size_t len, int err) override
	{
		tx.push_back({context, flags, nullptr, len, 0, err, 0});
	}
	void rx_done(void *context, uint64_t, uint64_t flags, void *buf, size_t len,
		     uint64_t data, int err, size_t olen) override
	{
		rx.push_back({context, flags, buf, len, data, err, olen});
	}
	void remote_done(uint64_t flags) override { remote.push_back(flags); }
	int remote_access(uint64_t key, uint64_t offset, uint64_t len, uint64_t access,
			  uint8_t **addr, uint64_t *serial) override
	{
		*serial = key;
		auto it = regions.find(key);
		if (it == regions.end() || !(it->second.access & access))
			return -FI_EACCES;
		if (offset > it->second.len || len > it->second.len - offset)
			return -FI_EINVAL;
		*addr = it->second.base + offset;
		return 0;
	}
	bool region_alive(uint64_t key, uint64_t) override { return regions.count(key) != 0; }
	void connection_lost(int err) override { lost.push_back(err); }

	std::vector<Completion> tx, rx;
	std::vector<int> lost;
	std::vector<uint64_t> remote;
	std::map<uint64_t, Region> regions;
};

class ConnectionTest : public ::testing::Test {
protected:
	void SetUp() override
	{
		int sv[2];
		ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		for (int fd : sv)
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		Limits limits;
		limits.tx_size = 8;
		limits.rx_size = 8;
		limits.inject_size = 64;
		a = std::make_unique<Connection>(oa, limits);
		b = std::make_unique<Connection>(ob, limits);
		a->attach(sv[0]);
		b->attach(sv[1]);
	}

	void pump(int rounds = 200)
	{
		for (int i = 0; i < rounds; i++) {
			a->progress_tx();
			b->progress_tx();
			a->progress_rx();
			b->progress_rx();
		}
	}

	FakeOwner oa, ob;
	std::unique_ptr<Connection> a, b;
};

iovec io(void *p, size_t n)
{
	return iovec{p, n};
}

PostArgs args(const iovec *iov, size_t count, void *context = nullptr,
	      uint64_t flags = FI_COMPLETION, uint64_t data = 0)
{
	PostArgs a;
	a.iov = iov;
	a.count = count;
	a.context = context;
	a.op_flags = flags;
	a.data = data;
	return a;
}

PostArgs injected(PostArgs a)
{
	a.copy = true;
	return a;
}

PostArgs acked(PostArgs a)
{
	a.want_ack = true;
	return a;
}

} // namespace

TEST_F(ConnectionTest, MessageWithIovAndRemoteData)
{
	char part1[] = "hello ", part2[] = "world";
	iovec send_iov[2] = {io(part1, 6), io(part2, 6)};
	char r1[4] = {}, r2[20] = {};
	iovec recv_iov[2] = {io(r1, 4), io(r2, 20)};
	ASSERT_EQ(0, b->post_recv(recv_iov, 2, &r1, FI_COMPLETION));
	ASSERT_EQ(0, a->post_msg(args(send_iov, 2, &part1, FI_COMPLETION | FI_REMOTE_CQ_DATA, 77)));
	pump();
	ASSERT_EQ(1u, oa.tx.size());
	EXPECT_EQ(&part1, oa.tx[0].context);
	EXPECT_EQ(0, oa.tx[0].err);
	ASSERT_EQ(1u, ob.rx.size());
	EXPECT_EQ(12u, ob.rx[0].len);
	EXPECT_EQ(77u, ob.rx[0].data);
	EXPECT_TRUE(ob.rx[0].flags & FI_REMOTE_CQ_DATA);
	EXPECT_EQ(0, memcmp(r1, "hell", 4));
	EXPECT_STREQ("o world", r2);
}

TEST_F(ConnectionTest, UnexpectedMessageWaitsInSocketUntilReceivePosted)
{
	char msg[] = "early";
	iovec s = io(msg, 6);
	ASSERT_EQ(0, a->post_msg(injected(args(&s, 1))));
	pump();
	EXPECT_TRUE(ob.rx.empty());
	EXPECT_TRUE(b->rx_paused());
	char buf[16] = {};
	iovec r = io(buf, sizeof(buf));
	ASSERT_EQ(0, b->post_recv(&r, 1, buf, FI_COMPLETION));
	pump();
	ASSERT_EQ(1u, ob.rx.size());
	EXPECT_STREQ("early", buf);
}

TEST_F(ConnectionTest, LargeMessageStreamsThroughPartialTransfers)
{
	std::vector<uint8_t> out(8 << 20), in(8 << 20);
	for (size_t i = 0; i < out.size(); i++)
		out[i] = static_cast<uint8_t>(i * 7);
	iovec s = io(out.data(), out.size()), r = io(in.data(), in.size());
	ASSERT_EQ(0, b->post_recv(&r, 1, nullptr, FI_COMPLETION));
	ASSERT_EQ(0, a->post_msg(args(&s, 1)));
	for (int i = 0; i < 100000 && ob.rx.empty(); i++)
		pump(1);
	ASSERT_EQ(1u, ob.rx.size());
	EXPECT_EQ(out, in);
}

TEST_F(ConnectionTest, TruncationReportsOverflowAndKeepsStreamInSync)
{
	char big[100];
	memset(big, 'x', sizeof(big));
	char small[10];
	iovec s = io(big, sizeof(big)), r = io(small, sizeof(small));
	ASSERT_EQ(0, b->post_recv(&r, 1, small, FI_COMPLETION));
	ASSERT_EQ(0, a->post_msg(args(&s, 1)));
	char next[] = "next";
	iovec s2 = io(next, 5);
	char buf[8] = {};
	iovec r2 = io(buf, sizeof(buf));
	ASSERT_EQ(0, b->post_recv(&r2, 1, buf, FI_COMPLETION));
	ASSERT_EQ(0, a->post_msg(args(&s2, 1)));
	pump();
	ASSERT_EQ(2u, ob.rx.size());
	EXPECT_EQ(FI_ETRUNC, ob.rx[0].err);
	EXPECT_EQ(90u, ob.rx[0].olen);
	EXPECT_EQ(10u, ob.rx[0].len);
	EXPECT_EQ(0, ob.rx[1].err);
	EXPECT_STREQ("next", buf);
}

TEST_F(ConnectionTest, MultiRecvPacksMessagesAndReleasesBuffer)
{
	char pool[32] = {};
	iovec r = io(pool, sizeof(pool));
	b->set_min_multi_recv(10);
	ASSERT_EQ(0, b->post_recv(&r, 1, pool, FI_COMPLETION | FI_MULTI_RECV));
	char m[] = "abcdefgh";   // 9 bytes with NUL
	iovec s = io(m, 9);
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, a->post_msg(args(&s, 1)));
	pump();
	ASSERT_EQ(3u, ob.rx.size());
	EXPECT_EQ(pool, ob.rx[0].buf);
	EXPECT_EQ(pool + 9, ob.rx[1].buf);
	EXPECT_FALSE(ob.rx[1].flags & FI_MULTI_RECV);
	EXPECT_TRUE(ob.rx[2].flags & FI_MULTI_RECV);   // 5 bytes left < 10
	EXPECT_STREQ("abcdefgh", pool + 18);
}

TEST_F(ConnectionTest, CancelPostedReceive)
{
	char buf[8];
	iovec r = io(buf, sizeof(buf));
	ASSERT_EQ(0, b->post_recv(&r, 1, buf, FI_COMPLETION));
	EXPECT_EQ(0, b->cancel_recv(buf));
	ASSERT_EQ(1u, ob.rx.size());
	EXPECT_EQ(FI_ECANCELED, ob.rx[0].err);
	EXPECT_EQ(-FI_ENOENT, b->cancel_recv(buf));
}

TEST_F(ConnectionTest, DeliveryCompleteWaitsForAck)
{
	char m[] = "dc";
	iovec s = io(m, 3);
	ASSERT_EQ(0, a->post_msg(acked(args(&s, 1, m))));
	pump();
	EXPECT_TRUE(oa.tx.empty());   // receiver has no buffer yet, so no ack
	char buf[4];
	iovec r = io(buf, sizeof(buf));
	ASSERT_EQ(0, b->post_recv(&r, 1, buf, FI_COMPLETION));
	pump();
	ASSERT_EQ(1u, oa.tx.size());
	EXPECT_EQ(0, oa.tx[0].err);
}

TEST_F(ConnectionTest, RmaWriteReadAndRejections)
{
	uint8_t target[64];
	memset(target, 0, sizeof(target));
	ob.regions[5] = {target + 8, 48, FI_REMOTE_WRITE | FI_REMOTE_READ};
	ob.regions[6] = {target + 8, 48, FI_REMOTE_READ};

	uint8_t src[16];
	memset(src, 0xab, sizeof(src));
	iovec s = io(src, sizeof(src));
	ASSERT_EQ(0, a->post_write(args(&s, 1, src), fi_rma_iov{4, 16, 5}));
	pump();
	ASSERT_EQ(1u, oa.tx.size());
	EXPECT_EQ(0, oa.tx[0].err);
	EXPECT_EQ(0xab, target[12]);
	EXPECT_EQ(0xab, target[27]);
	EXPECT_EQ(0, target[28]);

	// Wrong key, missing right, out of range (including offset overflow): refused.
	ASSERT_EQ(0, a->post_write(args(&s, 1, src), fi_rma_iov{0, 16, 99}));
	ASSERT_EQ(0, a->post_write(args(&s, 1, src), fi_rma_iov{0, 16, 6}));
	ASSERT_EQ(0, a->post_write(args(&s, 1, src), fi_rma_iov{40, 16, 5}));
	ASSERT_EQ(0, a->post_write(args(&s, 1, src), fi_rma_iov{UINT64_MAX - 4, 16, 5}));
	pump();
	ASSERT_EQ(5u, oa.tx.size());
	EXPECT_EQ(FI_EACCES, oa.tx[1].err);
	EXPECT_EQ(FI_EACCES, oa.tx[2].err);
	EXPECT_EQ(FI_EINVAL, oa.tx[3].err);
	EXPECT_EQ(FI_EINVAL, oa.tx[4].err);
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(0, target[i]);   // guard bytes before the region
	for (int i = 56; i < 64; i++)
		EXPECT_EQ(0, target[i]);   // and after it

	uint8_t back[16] = {};
	iovec r = io(back, sizeof(back));
	ASSERT_EQ(0, a->post_read(args(&r, 1, back), fi_rma_iov{4, 16, 6}));
	ASSERT_EQ(0, a->post_read(args(&r, 1, back), fi_rma_iov{4, 16, 77}));
	pump();
	ASSERT_EQ(7u, oa.tx.size());
	EXPECT_EQ(0, oa.tx[5].err);
	EXPECT_EQ(FI_READ | FI_RMA, oa.tx[5].flags);
	EXPECT_EQ(0xab, back[15]);
	EXPECT_EQ(FI_EACCES, oa.tx[6].err);
	EXPECT_TRUE(oa.lost.empty());
	EXPECT_TRUE(ob.lost.empty());
}

TEST_F(ConnectionTest, WriteDataRaisesRemoteCompletion)
{
	uint8_t target[8] = {};
	ob.regions[1] = {target, 8, FI_REMOTE_WRITE};
	uint8_t src[4] = {1, 2, 3, 4};
	iovec s = io(src, 4);
	ASSERT_EQ(0, a->post_write(injected(args(&s, 1, nullptr, FI_COMPLETION | FI_REMOTE_CQ_DATA, 1234)),
				   fi_rma_iov{0, 4, 1}));
	pump();
	ASSERT_EQ(1u, ob.rx.size());
	EXPECT_EQ(1234u, ob.rx[0].data);
	EXPECT_TRUE(ob.rx[0].flags & FI_REMOTE_WRITE);
	EXPECT_EQ(4, target[3]);
	ASSERT_EQ(1u, ob.remote.size());
	EXPECT_EQ(FI_REMOTE_WRITE, ob.remote[0]);
}

TEST(ConnectionFlow, ResponsesBeyondThePoolWaitForFreeSlots)
{
	int sv[2];
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	for (int fd : sv)
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	FakeOwner oa, ob;
	Limits big, tiny;
	big.tx_size = 16;
	tiny.tx_size = 1;
	tiny.rx_size = 1;   // the target owes at most 2 responses at a time
	Connection a(oa, big), b(ob, tiny);
	a.attach(sv[0]);
	b.attach(sv[1]);
	uint8_t target[16];
	for (int i = 0; i < 16; i++)
		target[i] = static_cast<uint8_t>(i);
	ob.regions[3] = {target, 16, FI_REMOTE_READ};
	uint8_t back[12][1];
	iovec iov[12];
	for (int i = 0; i < 12; i++) {
		iov[i] = iovec{back[i], 1};
		PostArgs args;
		args.iov = &iov[i];
		args.count = 1;
		args.op_flags = FI_COMPLETION;
		ASSERT_EQ(0, a.post_read(args, fi_rma_iov{static_cast<uint64_t>(i), 1, 3}));
	}
	for (int round = 0; round < 200 && oa.tx.size() < 12; round++) {
		a.progress_tx();
		b.progress_rx();
		b.progress_tx();
		a.progress_rx();
	}
	ASSERT_EQ(12u, oa.tx.size());
	for (int i = 0; i < 12; i++)
		EXPECT_EQ(i, back[i][0]);
}

TEST(ConnectionProtocol, GarbageDropsConnection)
{
	int sv[2];
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	FakeOwner owner;
	Connection c(owner, Limits{});
	c.attach(sv[1]);
	uint8_t junk[kWireHeaderSize];
	memset(junk, 0xee, sizeof(junk));
	ASSERT_EQ(static_cast<ssize_t>(sizeof(junk)), write(sv[0], junk, sizeof(junk)));
	c.progress_rx();
	ASSERT_EQ(1u, owner.lost.size());
	EXPECT_EQ(FI_EIO, owner.lost[0]);
	EXPECT_FALSE(c.active());
	close(sv[0]);
}

TEST(ConnectionProtocol, AckForUnknownRequestDropsConnection)
{
	int sv[2];
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	FakeOwner owner;
	Connection c(owner, Limits{});
	c.attach(sv[1]);
	WireHeader h;
	h.op = WireOp::ack;
	h.id = 12345;
	uint8_t buf[kWireHeaderSize];
	encode_header(h, buf);
	ASSERT_EQ(static_cast<ssize_t>(sizeof(buf)), write(sv[0], buf, sizeof(buf)));
	c.progress_rx();
	ASSERT_EQ(1u, owner.lost.size());
	close(sv[0]);
}

TEST(ConnectionProtocol, PeerCloseFlushesOutstanding)
{
	int sv[2];
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	FakeOwner owner;
	Connection c(owner, Limits{});
	c.attach(sv[1]);
	uint8_t back[4];
	iovec r{back, 4};
	ASSERT_EQ(0, c.post_read(args(&r, 1, back), fi_rma_iov{0, 4, 1}));
	close(sv[0]);
	c.progress_rx();
	ASSERT_EQ(1u, owner.lost.size());
	EXPECT_TRUE(owner.lost[0] == 0 || owner.lost[0] == FI_ECONNRESET);
	ASSERT_EQ(1u, owner.tx.size());
	EXPECT_EQ(FI_ECANCELED, owner.tx[0].err);
}

TEST(ConnectionProtocol, PeerCloseFlushesPostedReceives)
{
	int sv[2];
	ASSERT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	FakeOwner owner;
	Connection c(owner, Limits{});
	char one[8], two[8];
	iovec r1{one, sizeof(one)}, r2{two, sizeof(two)};
	ASSERT_EQ(0, c.post_recv(&r1, 1, one, FI_COMPLETION));
	ASSERT_EQ(0, c.post_recv(&r2, 1, two, FI_COMPLETION | FI_MULTI_RECV));
	c.attach(sv[1]);
	close(sv[0]);
	c.progress_rx();
	ASSERT_EQ(1u, owner.lost.size());
	// Every buffer comes back, in posting order, cancelled; a multi-receive buffer is
	// released (FI_MULTI_RECV) with it.
	ASSERT_EQ(2u, owner.rx.size());
	EXPECT_EQ(FI_ECANCELED, owner.rx[0].err);
	EXPECT_EQ(one, owner.rx[0].context);
	EXPECT_EQ(FI_ECANCELED, owner.rx[1].err);
	EXPECT_EQ(two, owner.rx[1].context);
	EXPECT_TRUE(owner.rx[1].flags & FI_MULTI_RECV);
	EXPECT_EQ(-FI_ENOENT, c.cancel_recv(one));
	// Nothing can arrive any more: later receives are refused, not parked forever.
	EXPECT_EQ(-FI_ENOTCONN, c.post_recv(&r1, 1, one, FI_COMPLETION));
}
