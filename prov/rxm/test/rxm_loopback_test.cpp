// Integration tests: RDM endpoints of "tcp;ofi_rxm" in one process talking over loopback,
// through the public fi_* API only. Each endpoint has its own AV and CQ; the harness reads
// every CQ while waiting (manual progress needs all sides driven) and keeps what it read.
// RXM_TEST_PROV and RXM_TEST_ADDR select another layering and the local address to use
// (e.g. "verbs;ofi_rxm" and 192.0.2.1 in the Soft-RoCE VM).
#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "config.h"
#include "src/registry.h"
#include "rxm_test_node.h"
#include "rxm_test_provider.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <arpa/inet.h>
#include <poll.h>
#include <time.h>
#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <atomic>
#include <thread>
#include <vector>

namespace {

// The registry refers to providers weakly; referencing them links them in from the
// convenience library.
#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
#ifdef HAVE_VERBS
fi_provider *(*volatile link_verbs)() = ofi_verbs_provider_init;
#endif
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;
#ifdef HAVE_SHM
// rxm opens shm for same-host peers with FI_OFI_RXM_USE_SHM=1 (rxm_shm_loopback.sh).
fi_provider *(*volatile link_shm)() = ofi_shm_provider_init;
#endif

struct Completion {
	fi_cq_tagged_entry entry{};
	fi_addr_t source = FI_ADDR_NOTAVAIL;
	bool error = false;
	fi_cq_err_entry err{};
};

// An RDM endpoint (rxm_test_node.h) that keeps its completions, with their sources.
class Node : public rxm_test::RdmNode {
public:
	explicit Node(fi_info *info, enum fi_wait_obj wait_obj = FI_WAIT_NONE)
		: RdmNode(info, {.cq_format = FI_CQ_FORMAT_TAGGED, .cq_size = 1024,
				 .wait_obj = wait_obj})
	{
	}

	// Moves whatever the CQ has into 'done'.
	void poll()
	{
		fi_cq_tagged_entry e[8];
		fi_addr_t src[8];
		ssize_t n = fi_cq_readfrom(cq, e, 8, src);
		for (ssize_t i = 0; i < n; i++) {
			Completion c;
			c.entry = e[i];
			c.source = src[i];
			done.push_back(c);
		}
		if (n == -FI_EAVAIL) {
			Completion c;
			c.error = true;
			ASSERT_EQ(1, fi_cq_readerr(cq, &c.err, 0));
			c.entry.op_context = c.err.op_context;
			c.entry.flags = c.err.flags;
			done.push_back(c);
		} else if (n < 0) {
			ASSERT_EQ(-FI_EAGAIN, n);
		}
	}

	std::deque<Completion> done;
};

class RxmLoopback : public ::testing::Test {
protected:
	void SetUp() override
	{
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SOURCE |
			      FI_DIRECTED_RECV | FI_MULTI_RECV;
		hints->fabric_attr->prov_name = strdup(rxm_test::provider());
		hints->addr_format = FI_SOCKADDR_IN;
		hints->domain_attr->mr_mode = rxm_test::mr_mode();
		int ret = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE, hints, &info);
		fi_freeinfo(hints);
#ifndef HAVE_TCP
		if (ret && !rxm_test::provider_must_exist())
			GTEST_SKIP() << "built without the tcp provider";
#endif
		ASSERT_EQ(0, ret) << rxm_test::provider() << ": " << fi_strerror(-ret);
		a = std::make_unique<Node>(info);
		b = std::make_unique<Node>(info);
		b_at_a = a->insert(*b);
		a_at_b = b->insert(*a);
	}
	void TearDown() override
	{
		a.reset();
		b.reset();
		c.reset();
		fi_freeinfo(info);
	}

	// Polls every node until 'node' has a completion for context (or times out).
	Completion wait_for(Node &node, void *context, int seconds = 20)
	{
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
		while (std::chrono::steady_clock::now() < deadline) {
			for (Node *n : {a.get(), b.get(), c.get()})
				if (n)
					n->poll();
			for (auto it = node.done.begin(); it != node.done.end(); ++it) {
				if (it->entry.op_context == context) {
					Completion found = *it;
					node.done.erase(it);
					return found;
				}
			}
		}
		ADD_FAILURE() << "no completion for context " << context;
		return {};
	}

	void progress_for(int ms)
	{
		auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
		while (std::chrono::steady_clock::now() < deadline)
			for (Node *n : {a.get(), b.get(), c.get()})
				if (n)
					n->poll();
	}

	// One message from a to b connects them; 200 ms of progress after it lets a same-host
	// pair (FI_OFI_RXM_USE_SHM=1) move to shm before the test's own messages.
	void connect_and_settle()
	{
		int warm_s, warm_r;
		char warm = 0;
		ASSERT_EQ(0, fi_recv(b->ep, &warm, 1, nullptr, FI_ADDR_UNSPEC, &warm_r));
		ASSERT_EQ(0, fi_send(a->ep, "w", 1, nullptr, b_at_a, &warm_s));
		ASSERT_FALSE(wait_for(*a, &warm_s).error);
		ASSERT_FALSE(wait_for(*b, &warm_r).error);
		progress_for(200);
	}

	static std::vector<uint8_t> pattern(size_t len, uint8_t seed)
	{
		std::vector<uint8_t> v(len);
		for (size_t i = 0; i < len; i++)
			v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 9));
		return v;
	}

	fi_info *info = nullptr;
	std::unique_ptr<Node> a, b, c;
	fi_addr_t b_at_a = FI_ADDR_NOTAVAIL, a_at_b = FI_ADDR_NOTAVAIL;
};

const size_t kSizes[] = {0, 1, 64, 16383, 16384, 16385, 100000, 131072, 131073, 1 << 20, 4 << 20};

TEST_F(RxmLoopback, MessagesOfAllProtocolsArriveIntactWithSource)
{
	int send_ctx, recv_ctx;
	for (size_t size : kSizes) {
		SCOPED_TRACE(size);
		auto data = pattern(size, static_cast<uint8_t>(size));
		std::vector<uint8_t> in(size + 8, 0xee);
		ASSERT_EQ(0, fi_recv(b->ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &recv_ctx));
		ASSERT_EQ(0, fi_send(a->ep, data.data(), size, nullptr, b_at_a, &send_ctx));
		Completion s = wait_for(*a, &send_ctx);
		Completion r = wait_for(*b, &recv_ctx);
		ASSERT_FALSE(s.error);
		ASSERT_FALSE(r.error) << fi_strerror(r.err.err);
		EXPECT_EQ(FI_SEND | FI_MSG, s.entry.flags);
		EXPECT_EQ(FI_RECV | FI_MSG, r.entry.flags);
		EXPECT_EQ(size, r.entry.len);
		EXPECT_EQ(a_at_b, r.source);
		// (an empty vector's data() is NULL, which memcmp must not get even for 0 bytes)
		EXPECT_TRUE(std::equal(data.begin(), data.end(), in.begin()));
		EXPECT_EQ(0xee, in[size]); // nothing written past the message
	}
}

TEST_F(RxmLoopback, TaggedUnexpectedMessagesMatchWithIgnoreBits)
{
	int send_ctx[3], recv_ctx[3];
	const size_t sizes[3] = {100, 50000, 300000};
	std::vector<std::vector<uint8_t>> data;
	for (int i = 0; i < 3; i++) {
		data.push_back(pattern(sizes[i], static_cast<uint8_t>(i)));
		ASSERT_EQ(0, fi_tsend(a->ep, data[i].data(), sizes[i], nullptr, b_at_a,
				      0xabc00 + i, &send_ctx[i]));
	}
	progress_for(200); // all three arrive before any receive is posted
	for (int i = 2; i >= 0; i--) {
		std::vector<uint8_t> in(sizes[i]);
		ASSERT_EQ(0, fi_trecv(b->ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC,
				      0xabc00 + i, 0, &recv_ctx[i]));
		Completion r = wait_for(*b, &recv_ctx[i]);
		ASSERT_FALSE(r.error) << fi_strerror(r.err.err);
		EXPECT_EQ(FI_RECV | FI_TAGGED, r.entry.flags);
		EXPECT_EQ(0xabc00u + i, r.entry.tag);
		EXPECT_EQ(data[i], in);
	}
	for (int i = 0; i < 3; i++)
		EXPECT_FALSE(wait_for(*a, &send_ctx[i]).error);

	// Ignore bits: the receive accepts any tag in 0x500..0x5ff.
	uint64_t payload = 42;
	int rctx, sctx;
	uint64_t got = 0;
	ASSERT_EQ(0, fi_trecv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, 0x500, 0xff, &rctx));
	ASSERT_EQ(0, fi_tsend(a->ep, &payload, sizeof(payload), nullptr, b_at_a, 0x5a7, &sctx));
	Completion r = wait_for(*b, &rctx);
	EXPECT_EQ(0x5a7u, r.entry.tag);
	EXPECT_EQ(42u, got);
	wait_for(*a, &sctx);
}

TEST_F(RxmLoopback, RemoteCqDataAndInject)
{
	uint32_t v = 0x1234, got = 0;
	int rctx;
	ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_injectdata(a->ep, &v, sizeof(v), 0xfeedULL, b_at_a));
	v = 0; // inject: the buffer is free at once
	Completion r = wait_for(*b, &rctx);
	EXPECT_EQ(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, r.entry.flags);
	EXPECT_EQ(0xfeedu, r.entry.data);
	EXPECT_EQ(0x1234u, got);
	EXPECT_EQ(-FI_EMSGSIZE, fi_inject(a->ep, &v, info->tx_attr->inject_size + 1, b_at_a));
}

// Small messages to receives posted first take rxm's one-step delivery (deliver_eager):
// over shm's ring (FI_OFI_RXM_USE_SHM=1) or tcp's stage. Its completion must be the general
// path's: flags, tag, data, FI_SOURCE, buffer, several iovs, truncation, matching by tag.
TEST_F(RxmLoopback, PostedReceivesTakeSmallMessagesWholeAndInOrder)
{
	connect_and_settle();
	uint64_t got = 0, v = 0x0102030405060708ULL;
	int r1, s1;
	ASSERT_EQ(0, fi_trecv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, 0x55, 0, &r1));
	ASSERT_EQ(0, fi_tsenddata(a->ep, &v, sizeof(v), nullptr, 0xabcd, b_at_a, 0x55, &s1));
	Completion c = wait_for(*b, &r1);
	ASSERT_FALSE(c.error);
	EXPECT_EQ(FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA, c.entry.flags);
	EXPECT_EQ(0xabcdu, c.entry.data);
	EXPECT_EQ(0x55u, c.entry.tag);
	EXPECT_EQ(sizeof(v), c.entry.len);
	EXPECT_EQ(&got, c.entry.buf);
	EXPECT_EQ(a_at_b, c.source);
	EXPECT_EQ(v, got);
	EXPECT_FALSE(wait_for(*a, &s1).error);

	char p1[3], p2[10];
	iovec iov[2] = {{p1, sizeof(p1)}, {p2, sizeof(p2)}};
	int r2, s2;
	ASSERT_EQ(0, fi_recvv(b->ep, iov, nullptr, 2, FI_ADDR_UNSPEC, &r2));
	ASSERT_EQ(0, fi_send(a->ep, "abcdefghij", 10, nullptr, b_at_a, &s2));
	c = wait_for(*b, &r2);
	ASSERT_FALSE(c.error);
	EXPECT_EQ(FI_RECV | FI_MSG, c.entry.flags);
	EXPECT_EQ(10u, c.entry.len);
	EXPECT_EQ(p1, c.entry.buf);
	EXPECT_EQ(a_at_b, c.source);
	EXPECT_EQ(0, memcmp(p1, "abc", 3));
	EXPECT_EQ(0, memcmp(p2, "defghij", 7));
	EXPECT_FALSE(wait_for(*a, &s2).error);

	char small[4];
	int r3, s3;
	ASSERT_EQ(0, fi_trecv(b->ep, small, sizeof(small), nullptr, FI_ADDR_UNSPEC, 9, 0, &r3));
	ASSERT_EQ(0, fi_tsend(a->ep, "0123456789", 10, nullptr, b_at_a, 9, &s3));
	c = wait_for(*b, &r3);
	ASSERT_TRUE(c.error);
	EXPECT_EQ(FI_ETRUNC, c.err.err);
	EXPECT_EQ(sizeof(small), c.err.len);
	EXPECT_EQ(6u, c.err.olen);
	EXPECT_EQ(9u, c.err.tag);
	EXPECT_EQ(FI_RECV | FI_TAGGED, c.err.flags);
	EXPECT_EQ(0, memcmp(small, "0123", 4));
	EXPECT_FALSE(wait_for(*a, &s3).error);

	// Matching by tag, then by posting order among receives of one tag.
	char in[4] = {};
	int r[4], s[4];
	const uint64_t recv_tags[4] = {1, 2, 3, 3};
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, fi_trecv(b->ep, &in[i], 1, nullptr, FI_ADDR_UNSPEC, recv_tags[i], 0,
				      &r[i]));
	const char *sends = "BAxy";
	const uint64_t send_tags[4] = {2, 1, 3, 3};
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, fi_tsend(a->ep, &sends[i], 1, nullptr, b_at_a, send_tags[i], &s[i]));
	for (int i = 0; i < 4; i++) {
		c = wait_for(*b, &r[i]);
		ASSERT_FALSE(c.error);
		EXPECT_EQ(recv_tags[i], c.entry.tag);
		EXPECT_FALSE(wait_for(*a, &s[i]).error);
	}
	EXPECT_EQ(0, memcmp(in, "ABxy", 4));
}

TEST_F(RxmLoopback, PeekClaimAndDiscard)
{
	uint64_t v = 77, got = 0;
	int sctx, peek_ctx, claim_ctx;
	fi_msg_tagged msg{};
	msg.addr = FI_ADDR_UNSPEC;
	msg.tag = 9;
	msg.context = &peek_ctx;
	// Nothing there yet.
	ASSERT_EQ(0, fi_trecvmsg(b->ep, &msg, FI_PEEK));
	Completion none = wait_for(*b, &peek_ctx);
	ASSERT_TRUE(none.error);
	EXPECT_EQ(FI_ENOMSG, none.err.err);

	ASSERT_EQ(0, fi_tsend(a->ep, &v, sizeof(v), nullptr, b_at_a, 9, &sctx));
	wait_for(*a, &sctx);
	Completion peeked;
	for (int tries = 0; tries < 100; tries++) {
		msg.context = &claim_ctx;
		ASSERT_EQ(0, fi_trecvmsg(b->ep, &msg, FI_PEEK | FI_CLAIM));
		peeked = wait_for(*b, &claim_ctx);
		if (!peeked.error)
			break;
		progress_for(10);
	}
	ASSERT_FALSE(peeked.error);
	EXPECT_EQ(sizeof(v), peeked.entry.len);
	EXPECT_EQ(9u, peeked.entry.tag);
	// A plain receive does not take the claimed message.
	int other_ctx;
	uint64_t other = 0;
	ASSERT_EQ(0, fi_trecv(b->ep, &other, sizeof(other), nullptr, FI_ADDR_UNSPEC, 9, 0, &other_ctx));
	iovec iov{&got, sizeof(got)};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.context = &claim_ctx;
	ASSERT_EQ(0, fi_trecvmsg(b->ep, &msg, FI_CLAIM));
	Completion claimed = wait_for(*b, &claim_ctx);
	ASSERT_FALSE(claimed.error);
	EXPECT_EQ(77u, got);

	// The pending plain receive gets the next one; a peek with FI_DISCARD drops another.
	uint64_t w = 88;
	ASSERT_EQ(0, fi_tsend(a->ep, &w, sizeof(w), nullptr, b_at_a, 9, &sctx));
	EXPECT_FALSE(wait_for(*b, &other_ctx).error);
	EXPECT_EQ(88u, other);
	wait_for(*a, &sctx);
}

// fi_cancel(3) of a send still queued for its connection: cancel says 0 only when the send
// then never takes place (it completes with FI_ECANCELED and the peer never sees it); for an
// operation already done, or an unknown context, cancel says -FI_ENOENT.
TEST_F(RxmLoopback, CancelledQueuedSendNeverArrives)
{
	int sctx, sctx2, rctx;
	uint64_t first = 1, second = 2, got = 0;
	// The first send to a peer waits for the connection it opens.
	ASSERT_EQ(0, fi_send(a->ep, &first, sizeof(first), nullptr, b_at_a, &sctx));
	ASSERT_EQ(0, fi_cancel(&a->ep->fid, &sctx));
	Completion c = wait_for(*a, &sctx);
	ASSERT_TRUE(c.error);
	EXPECT_EQ(FI_ECANCELED, c.err.err);
	ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_send(a->ep, &second, sizeof(second), nullptr, b_at_a, &sctx2));
	EXPECT_FALSE(wait_for(*b, &rctx).error);
	EXPECT_EQ(2u, got);
	EXPECT_FALSE(wait_for(*a, &sctx2).error);
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&a->ep->fid, &sctx2));
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&a->ep->fid, &rctx));
}

TEST_F(RxmLoopback, CancelAndTruncation)
{
	int rctx, sctx;
	char small[10];
	ASSERT_EQ(0, fi_recv(b->ep, small, sizeof(small), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_cancel(&b->ep->fid, &rctx));
	Completion c = wait_for(*b, &rctx);
	ASSERT_TRUE(c.error);
	EXPECT_EQ(FI_ECANCELED, c.err.err);

	for (size_t size : {size_t(100), size_t(50000), size_t(400000)}) {
		SCOPED_TRACE(size);
		auto data = pattern(size, 3);
		ASSERT_EQ(0, fi_recv(b->ep, small, sizeof(small), nullptr, FI_ADDR_UNSPEC, &rctx));
		ASSERT_EQ(0, fi_send(a->ep, data.data(), size, nullptr, b_at_a, &sctx));
		Completion t = wait_for(*b, &rctx);
		ASSERT_TRUE(t.error);
		EXPECT_EQ(FI_ETRUNC, t.err.err);
		EXPECT_EQ(sizeof(small), t.err.len);
		EXPECT_EQ(size - sizeof(small), t.err.olen);
		EXPECT_EQ(0, memcmp(small, data.data(), sizeof(small)));
		EXPECT_FALSE(wait_for(*a, &sctx).error);
	}
}

TEST_F(RxmLoopback, MultiReceiveSlicesOneBuffer)
{
	size_t min_free = 16384;
	ASSERT_EQ(0, fi_setopt(&b->ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min_free,
			       sizeof(min_free)));
	std::vector<uint8_t> big(65536, 0);
	iovec iov{big.data(), big.size()};
	int mctx;
	fi_msg msg{&iov, nullptr, 1, FI_ADDR_UNSPEC, &mctx, 0};
	ASSERT_EQ(0, fi_recvmsg(b->ep, &msg, FI_MULTI_RECV));
	int sctx[3];
	std::vector<std::vector<uint8_t>> data;
	for (int i = 0; i < 3; i++) {
		data.push_back(pattern(20000, static_cast<uint8_t>(10 * i)));
		ASSERT_EQ(0, fi_send(a->ep, data[i].data(), 20000, nullptr, b_at_a, &sctx[i]));
	}
	for (int i = 0; i < 3; i++) {
		Completion r = wait_for(*b, &mctx);
		ASSERT_FALSE(r.error);
		EXPECT_EQ(20000u, r.entry.len);
		EXPECT_EQ(big.data() + 20000 * i, r.entry.buf);
		EXPECT_EQ(i == 2, (r.entry.flags & FI_MULTI_RECV) != 0);
		EXPECT_EQ(0, memcmp(big.data() + 20000 * i, data[i].data(), 20000));
		wait_for(*a, &sctx[i]);
	}
}

TEST_F(RxmLoopback, DirectedReceiveAndUnknownSource)
{
	c = std::make_unique<Node>(info);
	fi_addr_t b_at_c = c->insert(*b);
	fi_addr_t c_at_b = b->insert(*c);
	uint32_t from_a = 1, from_c = 2, got_c = 0, got_any = 0;
	int rc, rany, sa, sc;
	ASSERT_EQ(0, fi_recv(b->ep, &got_c, sizeof(got_c), nullptr, c_at_b, &rc));
	ASSERT_EQ(0, fi_recv(b->ep, &got_any, sizeof(got_any), nullptr, FI_ADDR_UNSPEC, &rany));
	ASSERT_EQ(0, fi_send(a->ep, &from_a, sizeof(from_a), nullptr, b_at_a, &sa));
	Completion r = wait_for(*b, &rany); // A's message skips the receive directed at C
	EXPECT_EQ(1u, got_any);
	EXPECT_EQ(a_at_b, r.source);
	ASSERT_EQ(0, fi_send(c->ep, &from_c, sizeof(from_c), nullptr, b_at_c, &sc));
	r = wait_for(*b, &rc);
	EXPECT_EQ(2u, got_c);
	EXPECT_EQ(c_at_b, r.source);
	wait_for(*a, &sa);
	wait_for(*c, &sc);

	// A sender B's AV does not know is reported as FI_ADDR_NOTAVAIL.
	fi_addr_t rm = c_at_b;
	ASSERT_EQ(0, fi_av_remove(b->av, &rm, 1, 0));
	ASSERT_EQ(0, fi_recv(b->ep, &got_any, sizeof(got_any), nullptr, FI_ADDR_UNSPEC, &rany));
	ASSERT_EQ(0, fi_send(c->ep, &from_c, sizeof(from_c), nullptr, b_at_c, &sc));
	r = wait_for(*b, &rany);
	EXPECT_EQ(FI_ADDR_NOTAVAIL, r.source);
	wait_for(*c, &sc);
}

TEST_F(RxmLoopback, SimultaneousConnectAndSelf)
{
	uint32_t va = 10, vb = 20, got_a = 0, got_b = 0;
	int ra, rb, sa, sb;
	ASSERT_EQ(0, fi_recv(a->ep, &got_a, sizeof(got_a), nullptr, FI_ADDR_UNSPEC, &ra));
	ASSERT_EQ(0, fi_recv(b->ep, &got_b, sizeof(got_b), nullptr, FI_ADDR_UNSPEC, &rb));
	// Both connect before either side progresses.
	ASSERT_EQ(0, fi_send(a->ep, &va, sizeof(va), nullptr, b_at_a, &sa));
	ASSERT_EQ(0, fi_send(b->ep, &vb, sizeof(vb), nullptr, a_at_b, &sb));
	EXPECT_FALSE(wait_for(*a, &ra).error);
	EXPECT_FALSE(wait_for(*b, &rb).error);
	EXPECT_EQ(20u, got_a);
	EXPECT_EQ(10u, got_b);
	EXPECT_FALSE(wait_for(*a, &sa).error);
	EXPECT_FALSE(wait_for(*b, &sb).error);

	fi_addr_t self = a->insert(*a);
	uint32_t me = 99, got = 0;
	int rs, ss;
	ASSERT_EQ(0, fi_recv(a->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rs));
	ASSERT_EQ(0, fi_send(a->ep, &me, sizeof(me), nullptr, self, &ss));
	Completion r = wait_for(*a, &rs);
	EXPECT_FALSE(r.error);
	EXPECT_EQ(99u, got);
	EXPECT_EQ(self, r.source);
	wait_for(*a, &ss);
}

TEST_F(RxmLoopback, RmaWriteAndRead)
{
	if (!(info->caps & FI_RMA))
		GTEST_SKIP() << "core without RMA";
	std::vector<uint8_t> target(200000, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(0, fi_mr_reg(b->domain, target.data(), target.size(),
			       FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 5, 0, &mr, nullptr));
	uint64_t base = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
				? reinterpret_cast<uintptr_t>(target.data())
				: 0;
	auto data = pattern(150000, 1);
	int wctx, rctx;
	ASSERT_EQ(0, fi_write(a->ep, data.data(), data.size(), nullptr, b_at_a, base + 1000,
			      fi_mr_key(mr), &wctx));
	Completion w = wait_for(*a, &wctx);
	ASSERT_FALSE(w.error) << fi_strerror(w.err.err);
	EXPECT_EQ(FI_RMA | FI_WRITE, w.entry.flags);
	EXPECT_EQ(0, memcmp(target.data() + 1000, data.data(), data.size()));
	std::vector<uint8_t> back(5000);
	ASSERT_EQ(0, fi_read(a->ep, back.data(), back.size(), nullptr, b_at_a, base + 1000,
			     fi_mr_key(mr), &rctx));
	Completion r = wait_for(*a, &rctx);
	ASSERT_FALSE(r.error);
	EXPECT_EQ(0, memcmp(back.data(), data.data(), back.size()));
	// A wrong key is refused by the target with an error completion.
	ASSERT_EQ(0, fi_write(a->ep, data.data(), 10, nullptr, b_at_a, base, fi_mr_key(mr) + 77,
			      &wctx));
	EXPECT_TRUE(wait_for(*a, &wctx).error);
	EXPECT_EQ(0, fi_close(&mr->fid));
}

TEST_F(RxmLoopback, WriteDataAndInjectWritesReachTheTarget)
{
	if (!(info->caps & FI_RMA))
		GTEST_SKIP() << "core without RMA";
	std::vector<uint8_t> target(4096, 0);
	fid_mr *mr = nullptr;
	ASSERT_EQ(0, fi_mr_reg(b->domain, target.data(), target.size(), FI_REMOTE_WRITE, 0, 6, 0,
			       &mr, nullptr));
	uint64_t base = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
				? reinterpret_cast<uintptr_t>(target.data())
				: 0;
	auto data = pattern(1000, 3);
	// As much of this value as the provider's CQ data holds (verbs;ofi_rxm: 32 bits).
	const uint64_t cq_data = info->domain_attr->cq_data_size >= 8
		? 0x1122334455667788ULL
		: 0x1122334455667788ULL & ((1ULL << (8 * info->domain_attr->cq_data_size)) - 1);
	int wctx;
	ASSERT_EQ(0, fi_writedata(a->ep, data.data(), data.size(), nullptr, cq_data,
				  b_at_a, base + 100, fi_mr_key(mr), &wctx));
	Completion w = wait_for(*a, &wctx);
	ASSERT_FALSE(w.error) << fi_strerror(w.err.err);
	EXPECT_EQ(FI_RMA | FI_WRITE, w.entry.flags);
	// The target's receive CQ reports the write with its data (no context of its own).
	Completion t = wait_for(*b, nullptr);
	ASSERT_FALSE(t.error);
	EXPECT_EQ(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, t.entry.flags);
	EXPECT_EQ(cq_data, t.entry.data);
	EXPECT_EQ(data.size(), t.entry.len);
	EXPECT_EQ(a_at_b, t.source) << "FI_SOURCE of a write with remote CQ data";
	EXPECT_EQ(0, memcmp(target.data() + 100, data.data(), data.size()));

	// Inject forms: the source may be reused at once; no completion at the initiator.
	std::vector<uint8_t> scratch = pattern(64, 9), sent = scratch;
	ASSERT_EQ(0, fi_inject_writedata(a->ep, scratch.data(), scratch.size(), 42, b_at_a,
					 base + 2000, fi_mr_key(mr)));
	std::fill(scratch.begin(), scratch.end(), 0xEE);
	t = wait_for(*b, nullptr);
	ASSERT_FALSE(t.error);
	EXPECT_EQ(FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA, t.entry.flags);
	EXPECT_EQ(42u, t.entry.data);
	EXPECT_EQ(a_at_b, t.source);
	EXPECT_EQ(0, memcmp(target.data() + 2000, sent.data(), sent.size()));

	ASSERT_EQ(0, fi_inject_write(a->ep, sent.data(), 32, b_at_a, base + 3000, fi_mr_key(mr)));
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (memcmp(target.data() + 3000, sent.data(), 32) != 0 &&
	       std::chrono::steady_clock::now() < deadline)
		progress_for(1);
	EXPECT_EQ(0, memcmp(target.data() + 3000, sent.data(), 32));
	progress_for(20);
	EXPECT_TRUE(a->done.empty()) << "an inject write produced a completion";
	EXPECT_TRUE(b->done.empty()) << "a write without data produced a target completion";
	std::vector<uint8_t> big(info->tx_attr->inject_size + 1);
	EXPECT_EQ(-FI_EMSGSIZE, fi_inject_write(a->ep, big.data(), big.size(), b_at_a, base,
						fi_mr_key(mr)));
	EXPECT_EQ(0, fi_close(&mr->fid));
}

TEST_F(RxmLoopback, UnreachablePeerFailsPendingSends)
{
	// A listener-less address: grab a free port and close it again.
	c = std::make_unique<Node>(info);
	uint8_t dead[64];
	memcpy(dead, c->name, c->name_len);
	c.reset(); // its passive endpoint is gone; nobody listens there now
	fi_addr_t nowhere = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(1, fi_av_insert(a->av, dead, 1, &nowhere, 0, nullptr));
	uint32_t v = 5;
	int sctx[2];
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, nowhere, &sctx[0]));
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, nowhere, &sctx[1]));
	for (int i = 0; i < 2; i++) {
		Completion e = wait_for(*a, &sctx[i]);
		ASSERT_TRUE(e.error);
		EXPECT_NE(0, e.err.err);
	}
	// The endpoint keeps working with live peers.
	int rctx, s2;
	uint32_t got = 0;
	ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, b_at_a, &s2));
	EXPECT_FALSE(wait_for(*b, &rctx).error);
	EXPECT_EQ(5u, got);
	wait_for(*a, &s2);
}

TEST_F(RxmLoopback, RestartedPeerIsReachedAgain)
{
	uint32_t v = 1, got = 0;
	int rctx, sctx;
	ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, b_at_a, &sctx));
	wait_for(*b, &rctx);
	wait_for(*a, &sctx);
	// A restarts: a new endpoint on a new address; B learns it and both talk again.
	a = std::make_unique<Node>(info);
	b_at_a = a->insert(*b);
	a_at_b = b->insert(*a);
	v = 2;
	ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, b_at_a, &sctx));
	Completion r = wait_for(*b, &rctx);
	EXPECT_FALSE(r.error);
	EXPECT_EQ(2u, got);
	EXPECT_EQ(a_at_b, r.source);
	wait_for(*a, &sctx);
	// And B can answer on its own.
	ASSERT_EQ(0, fi_recv(a->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_send(b->ep, &v, sizeof(v), nullptr, a_at_b, &sctx));
	EXPECT_FALSE(wait_for(*a, &rctx).error);
	wait_for(*b, &sctx);
}

TEST_F(RxmLoopback, PeerRestartedOnTheSameAddressReplacesItsConnection)
{
	// C listens on a fixed port from this test's range, talks to B, then is reopened on the
	// same address (new endpoint id) before B notices the old one went away.
	fi_info *fixed = fi_dupinfo(info);
	ASSERT_NE(nullptr, fixed->src_addr);
	reinterpret_cast<sockaddr_in *>(fixed->src_addr)->sin_port = htons(21201);
	uint32_t v = 1, got = 0;
	int rctx, sctx;
	for (int round = 0; round < 2; round++) {
		SCOPED_TRACE(round);
		c.reset();
		c = std::make_unique<Node>(fixed);
		fi_addr_t b_at_c = c->insert(*b);
		fi_addr_t c_at_b = b->insert(*c); // the same entry both rounds
		ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
		v = 100 + round;
		ASSERT_EQ(0, fi_send(c->ep, &v, sizeof(v), nullptr, b_at_c, &sctx));
		Completion r = wait_for(*b, &rctx);
		EXPECT_FALSE(r.error);
		EXPECT_EQ(v, got);
		EXPECT_EQ(c_at_b, r.source);
		wait_for(*c, &sctx);
		// B answers over whatever connection it now has to C.
		ASSERT_EQ(0, fi_recv(c->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
		ASSERT_EQ(0, fi_send(b->ep, &v, sizeof(v), nullptr, c_at_b, &sctx));
		EXPECT_FALSE(wait_for(*c, &rctx).error);
		EXPECT_FALSE(wait_for(*b, &sctx).error);
	}
	c.reset();
	fi_freeinfo(fixed);
}

TEST_F(RxmLoopback, EmulatedAtomics)
{
	ASSERT_TRUE(info->caps & FI_ATOMIC);
	fi_atomic_attr attr{};
	ASSERT_EQ(0, fi_query_atomic(b->domain, FI_UINT64, FI_SUM, &attr, 0));
	EXPECT_EQ(8u, attr.size);
	EXPECT_GT(attr.count, 1u);
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_query_atomic(b->domain, FI_DOUBLE, FI_BOR, &attr, 0));
	size_t count = 0;
	EXPECT_EQ(0, fi_compare_atomicvalid(a->ep, FI_INT32, FI_CSWAP, &count));
	EXPECT_GT(count, 0u);

	uint64_t target[4] = {1, 2, 3, 4};
	fid_mr *mr = nullptr;
	ASSERT_EQ(0, fi_mr_reg(b->domain, target, sizeof(target), FI_REMOTE_WRITE | FI_REMOTE_READ,
			       0, 9, 0, &mr, nullptr));
	uint64_t base = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
				? reinterpret_cast<uintptr_t>(target)
				: 0;
	uint64_t add[2] = {10, 20};
	int ctx;
	ASSERT_EQ(0, fi_atomic(a->ep, add, 2, nullptr, b_at_a, base + 8, fi_mr_key(mr), FI_UINT64,
			       FI_SUM, &ctx));
	Completion c1 = wait_for(*a, &ctx);
	ASSERT_FALSE(c1.error) << fi_strerror(c1.err.err);
	EXPECT_EQ(FI_ATOMIC | FI_WRITE, c1.entry.flags);
	EXPECT_EQ(12u, target[1]);
	EXPECT_EQ(23u, target[2]);

	uint64_t old[4] = {};
	ASSERT_EQ(0, fi_fetch_atomic(a->ep, nullptr, 4, nullptr, old, nullptr, b_at_a, base,
				     fi_mr_key(mr), FI_UINT64, FI_ATOMIC_READ, &ctx));
	Completion c2 = wait_for(*a, &ctx);
	ASSERT_FALSE(c2.error);
	EXPECT_EQ(FI_ATOMIC | FI_READ, c2.entry.flags);
	EXPECT_EQ(12u, old[1]);
	EXPECT_EQ(4u, old[3]);

	uint64_t swap_in = 77, expect = 4, prev = 0;
	ASSERT_EQ(0, fi_compare_atomic(a->ep, &swap_in, 1, nullptr, &expect, nullptr, &prev, nullptr,
				       b_at_a, base + 24, fi_mr_key(mr), FI_UINT64, FI_CSWAP, &ctx));
	ASSERT_FALSE(wait_for(*a, &ctx).error);
	EXPECT_EQ(4u, prev);
	EXPECT_EQ(77u, target[3]);

	// Outside the registration, and with a wrong key: error completions, memory untouched.
	ASSERT_EQ(0, fi_atomic(a->ep, add, 2, nullptr, b_at_a, base + 24, fi_mr_key(mr), FI_UINT64,
			       FI_SUM, &ctx));
	Completion e1 = wait_for(*a, &ctx);
	ASSERT_TRUE(e1.error);
	EXPECT_EQ(FI_EACCES, e1.err.err);
	ASSERT_EQ(0, fi_atomic(a->ep, add, 1, nullptr, b_at_a, base, fi_mr_key(mr) + 1, FI_UINT64,
			       FI_SUM, &ctx));
	EXPECT_TRUE(wait_for(*a, &ctx).error);
	EXPECT_EQ(77u, target[3]);
	EXPECT_EQ(1u, target[0]);
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_atomic(a->ep, add, 1, nullptr, b_at_a, base, fi_mr_key(mr),
					    FI_DOUBLE, FI_BXOR, &ctx));
	EXPECT_EQ(0, fi_close(&mr->fid));
}

// Vector and msg forms: the largest count fi_fetch_atomicvalid allows, split over 4 local
// iocs, 4 result iocs and 4 targets; one bad target among several touches none of them.
TEST_F(RxmLoopback, VectorAtomicsAtTheLargestCount)
{
	size_t count = 0;
	ASSERT_EQ(0, fi_fetch_atomicvalid(a->ep, FI_UINT32, FI_SUM, &count));
	ASSERT_GE(count, 8u);
	std::vector<uint32_t> target(count, 1000), operand(count), old(count, 0);
	for (size_t i = 0; i < count; i++)
		operand[i] = uint32_t(i);
	fid_mr *mr = nullptr;
	ASSERT_EQ(0, fi_mr_reg(b->domain, target.data(), count * 4,
			       FI_REMOTE_WRITE | FI_REMOTE_READ, 0, 11, 0, &mr, nullptr));
	uint64_t base = (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
				? reinterpret_cast<uintptr_t>(target.data())
				: 0;
	// Pieces of 1, 2, 3 and the rest elements, locally and at the target.
	size_t cut[5] = {0, 1, 3, 6, count};
	fi_ioc iov[4], res[4];
	fi_rma_ioc rma[4];
	for (int i = 0; i < 4; i++) {
		iov[i] = {&operand[cut[i]], cut[i + 1] - cut[i]};
		res[i] = {&old[cut[i]], cut[i + 1] - cut[i]};
		rma[i] = {base + cut[i] * 4, cut[i + 1] - cut[i], fi_mr_key(mr)};
	}
	int ctx;
	fi_msg_atomic msg{iov, nullptr, 4, b_at_a, rma, 4, FI_UINT32, FI_SUM, &ctx, 0};
	ASSERT_EQ(0, fi_fetch_atomicmsg(a->ep, &msg, res, nullptr, 4, FI_COMPLETION));
	Completion c1 = wait_for(*a, &ctx);
	ASSERT_FALSE(c1.error) << fi_strerror(c1.err.err);
	for (size_t i = 0; i < count; i++) {
		ASSERT_EQ(1000u, old[i]) << i;
		ASSERT_EQ(1000u + i, target[i]) << i;
	}
	// fi_atomicv: the same iocs against one target range.
	ASSERT_EQ(0, fi_atomicv(a->ep, iov, nullptr, 4, b_at_a, base, fi_mr_key(mr), FI_UINT32,
				FI_SUM, &ctx));
	ASSERT_FALSE(wait_for(*a, &ctx).error);
	EXPECT_EQ(1000u + 2 * (count - 1), target[count - 1]);
	// More elements than any message holds, five iocs, totals that disagree: refused at once.
	std::vector<uint32_t> big(1 << 16);
	fi_ioc one{big.data(), big.size()};
	EXPECT_EQ(-FI_EINVAL, fi_atomicv(a->ep, &one, nullptr, 1, b_at_a, base, fi_mr_key(mr),
					 FI_UINT32, FI_SUM, &ctx));
	fi_ioc five[5] = {iov[0], iov[1], iov[2], iov[3], iov[0]};
	EXPECT_EQ(-FI_EINVAL, fi_atomicv(a->ep, five, nullptr, 5, b_at_a, base, fi_mr_key(mr),
					 FI_UINT32, FI_SUM, &ctx));
	msg.rma_iov_count = 3;
	EXPECT_EQ(-FI_EINVAL, fi_atomicmsg(a->ep, &msg, FI_COMPLETION));
	// The last target lies past the registration: an error, and no target changed.
	std::vector<uint32_t> before = target;
	msg.rma_iov_count = 4;
	rma[3].addr = base + 8 * count;
	ASSERT_EQ(0, fi_atomicmsg(a->ep, &msg, FI_COMPLETION));
	Completion e = wait_for(*a, &ctx);
	ASSERT_TRUE(e.error);
	EXPECT_EQ(FI_EACCES, e.err.err);
	EXPECT_EQ(before, target);
	EXPECT_EQ(0, fi_close(&mr->fid));
}

TEST_F(RxmLoopback, DeliveryCompleteWaitsForTheReceiver)
{
	for (size_t size : {size_t(100), size_t(70000)}) {
		SCOPED_TRACE(size);
		auto data = pattern(size, 9);
		iovec iov{data.data(), size};
		int sctx, rctx;
		fi_msg msg{&iov, nullptr, 1, b_at_a, &sctx, 0};
		ASSERT_EQ(0, fi_sendmsg(a->ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
		progress_for(300);
		for (const Completion &c : a->done)
			EXPECT_NE(&sctx, c.entry.op_context) << "completed before delivery";
		std::vector<uint8_t> in(size);
		ASSERT_EQ(0, fi_recv(b->ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx));
		EXPECT_FALSE(wait_for(*b, &rctx).error);
		EXPECT_FALSE(wait_for(*a, &sctx).error);
		EXPECT_EQ(data, in);
	}
}

// Over an RDMA core (verbs: credit flow control), a message between the eager size and the
// SAR limit goes by SAR when sent alone (its send completes with no receive posted: the
// receiver buffers it) and by rendezvous when it follows other sends still in flight to the
// peer (FI_OFI_RXM_STREAM_RNDV: its send waits for the matched receive's read). Either way
// the messages arrive intact and in order. (With FI_OFI_RXM_STREAM_RNDV=0 the streamed send
// goes by SAR and this fails; with FI_OFI_RXM_SAR_LIMIT=16384 the lone one waits and fails.)
TEST_F(RxmLoopback, MidSizeSendsGoBySarAloneAndByRendezvousInStreams)
{
	if (!strstr(rxm_test::provider(), "verbs"))
		GTEST_SKIP() << "the protocol choice is an RDMA core's (verbs)";
	connect_and_settle();
	constexpr size_t kSize = 65536; // above the 16 KiB eager size, below the 128 KiB SAR limit
	auto first = pattern(kSize, 3), second = pattern(kSize, 5), third = pattern(kSize, 8);

	// Alone: SAR, complete before any receive is posted.
	int s1, r1;
	ASSERT_EQ(0, fi_send(a->ep, first.data(), kSize, nullptr, b_at_a, &s1));
	ASSERT_FALSE(wait_for(*a, &s1).error) << "a lone mid-size send waited for a receive";
	std::vector<uint8_t> in1(kSize);
	ASSERT_EQ(0, fi_recv(b->ep, in1.data(), kSize, nullptr, FI_ADDR_UNSPEC, &r1));
	ASSERT_FALSE(wait_for(*b, &r1).error);
	EXPECT_EQ(first, in1);

	// Behind another send in flight: rendezvous, complete only once the receive matched.
	int s2, s3, r2, r3;
	ASSERT_EQ(0, fi_send(a->ep, second.data(), kSize, nullptr, b_at_a, &s2));
	ASSERT_EQ(0, fi_send(a->ep, third.data(), kSize, nullptr, b_at_a, &s3));
	progress_for(300);
	for (const Completion &c : a->done)
		EXPECT_NE(&s3, c.entry.op_context) << "the streamed send completed without a receive";
	std::vector<uint8_t> in2(kSize), in3(kSize);
	ASSERT_EQ(0, fi_recv(b->ep, in2.data(), kSize, nullptr, FI_ADDR_UNSPEC, &r2));
	ASSERT_EQ(0, fi_recv(b->ep, in3.data(), kSize, nullptr, FI_ADDR_UNSPEC, &r3));
	EXPECT_FALSE(wait_for(*b, &r2).error);
	EXPECT_FALSE(wait_for(*b, &r3).error);
	EXPECT_FALSE(wait_for(*a, &s2).error);
	EXPECT_FALSE(wait_for(*a, &s3).error);
	EXPECT_EQ(second, in2);
	EXPECT_EQ(third, in3);
}

TEST_F(RxmLoopback, MessagesTakingBothReceivePathsStayInOrder)
{
	// Over a core that lets rxm take messages where they arrive (tcp's direct receives,
	// shm's ring), a delivery-complete message still goes through a receive buffer: the
	// plain messages sent after it, ready in the same progress pass, must not overtake it.
	ASSERT_NO_FATAL_FAILURE(connect_and_settle());
	constexpr int kCount = 6;
	uint32_t in[kCount] = {};
	int sctx[kCount], rctx[kCount];
	for (int i = 0; i < kCount; i++)
		ASSERT_EQ(0, fi_recv(b->ep, &in[i], sizeof(in[i]), nullptr, FI_ADDR_UNSPEC, &rctx[i]));
	uint32_t out[kCount];
	for (int i = 0; i < kCount; i++) {
		out[i] = 1000 + static_cast<uint32_t>(i);
		iovec iov{&out[i], sizeof(out[i])};
		fi_msg msg{&iov, nullptr, 1, b_at_a, &sctx[i], 0};
		uint64_t flags = FI_COMPLETION | (i % 3 == 0 ? FI_DELIVERY_COMPLETE : 0);
		ASSERT_EQ(0, fi_sendmsg(a->ep, &msg, flags));
	}
	for (int i = 0; i < kCount; i++) {
		ASSERT_FALSE(wait_for(*b, &rctx[i]).error);
		EXPECT_EQ(1000u + i, in[i]) << "receive " << i;
	}
	for (int i = 0; i < kCount; i++)
		EXPECT_FALSE(wait_for(*a, &sctx[i]).error);
}

TEST_F(RxmLoopback, EagerMessagesOfManySizesStayInOrderAndIntact)
{
	// One tag, so only the order matches each message to its receive. Over shm (the pair
	// moved, FI_OFI_RXM_USE_SHM=1) 8-16 KiB eager messages span several ring slots and are
	// taken in pieces when their receive is posted; one-slot ones where they lie; the
	// unexpected ones (receives posted after the sends) go through receive buffers.
	ASSERT_NO_FATAL_FAILURE(connect_and_settle());
	const size_t sizes[] = {8192, 64, 16384, 4032, 4033, 1024, 12000, 0, 8192, 16000, 1};
	constexpr size_t kCount = sizeof(sizes) / sizeof(sizes[0]);
	constexpr size_t kPostedFirst = 7; // the rest arrive unexpected
	std::vector<std::vector<uint8_t>> out, in;
	int sctx[kCount], rctx[kCount];
	for (size_t i = 0; i < kCount; i++) {
		out.push_back(pattern(sizes[i], static_cast<uint8_t>(i * 13 + 1)));
		in.emplace_back(16385, 0xee);
	}
	for (size_t i = 0; i < kPostedFirst; i++)
		ASSERT_EQ(0, fi_trecv(b->ep, in[i].data(), in[i].size(), nullptr, FI_ADDR_UNSPEC,
				      7, 0, &rctx[i]));
	for (size_t i = 0; i < kCount; i++)
		ASSERT_EQ(0, fi_tsend(a->ep, out[i].data(), out[i].size(), nullptr, b_at_a, 7,
				      &sctx[i]));
	for (size_t i = 0; i < kCount; i++)
		EXPECT_FALSE(wait_for(*a, &sctx[i]).error);
	progress_for(50);
	for (size_t i = kPostedFirst; i < kCount; i++)
		ASSERT_EQ(0, fi_trecv(b->ep, in[i].data(), in[i].size(), nullptr, FI_ADDR_UNSPEC,
				      7, 0, &rctx[i]));
	for (size_t i = 0; i < kCount; i++) {
		Completion c = wait_for(*b, &rctx[i]);
		ASSERT_FALSE(c.error) << "receive " << i;
		EXPECT_EQ(sizes[i], c.entry.len) << "receive " << i;
		EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin()))
			<< "receive " << i;
		EXPECT_EQ(0xee, in[i][sizes[i]]) << "receive " << i; // nothing written beyond
	}
}

TEST_F(RxmLoopback, ConcurrentSendersOnOneEndpoint)
{
	// FI_THREAD_SAFE: two threads send on A at once while this thread drives B.
	constexpr int kPerThread = 200;
	std::vector<uint32_t> in(2 * kPerThread, 0);
	std::vector<int> rctx(2 * kPerThread);
	for (int i = 0; i < 2 * kPerThread; i++)
		ASSERT_EQ(0, fi_trecv(b->ep, &in[i], sizeof(uint32_t), nullptr, FI_ADDR_UNSPEC,
				      static_cast<uint64_t>(i), 0, &rctx[i]));
	std::atomic<int> failures{0}, finished{0};
	auto sender = [&](int first) {
		for (int i = first; i < first + kPerThread; i++) {
			uint32_t v = static_cast<uint32_t>(i) * 3;
			ssize_t ret;
			while ((ret = fi_tinject(a->ep, &v, sizeof(v), b_at_a, static_cast<uint64_t>(i))) ==
			       -FI_EAGAIN) {
				fi_cq_entry e;
				fi_cq_read(a->cq, &e, 0); // progress our side to free buffers
			}
			if (ret)
				failures++;
		}
		finished++;
	};
	std::thread t1(sender, 0), t2(sender, kPerThread);
	// Manual progress: B must accept the connection and drain while A sends.
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
	while (finished.load() < 2 && std::chrono::steady_clock::now() < deadline)
		b->poll();
	t1.join();
	t2.join();
	EXPECT_EQ(0, failures.load());
	for (int i = 0; i < 2 * kPerThread; i++) {
		Completion r = wait_for(*b, &rctx[i]);
		ASSERT_FALSE(r.error);
		EXPECT_EQ(static_cast<uint32_t>(i) * 3, in[i]);
	}
}

TEST_F(RxmLoopback, BlockingReadWaitsForData)
{
	uint64_t v = 5, got = 0;
	int rctx, sctx;
	ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	fi_cq_tagged_entry e;
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(b->cq, &e, 1, nullptr, 50)); // times out: nothing sent
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, b_at_a, &sctx));
	std::thread sender_progress([&] {
		fi_cq_tagged_entry se;
		EXPECT_EQ(1, fi_cq_sread(a->cq, &se, 1, nullptr, 5000));
		EXPECT_EQ(&sctx, se.op_context);
	});
	ASSERT_EQ(1, fi_cq_sread(b->cq, &e, 1, nullptr, 5000));
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(5u, got);
	sender_progress.join();
}

static double thread_cpu_seconds()
{
	timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST_F(RxmLoopback, BlockedReaderSleepsAndWakesForAMessage)
{
	Node w(info, FI_WAIT_UNSPEC);  // a CQ with a wait object sleeps on the cores' fds
	fi_addr_t w_at_a = a->insert(w);
	w.insert(*a);
	uint64_t v = 9, got = 0;
	int rctx, sctx;
	ASSERT_EQ(0, fi_recv(w.ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	double cpu = 0, wall = 0;
	ssize_t result = 0;
	fi_cq_tagged_entry e{};
	std::atomic<bool> started{false};
	std::thread reader([&] {
		double cpu0 = thread_cpu_seconds();
		auto t0 = std::chrono::steady_clock::now();
		started = true;
		result = fi_cq_sread(w.cq, &e, 1, nullptr, 10000);
		wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
		cpu = thread_cpu_seconds() - cpu0;
	});
	// The 1 s of sleep counts from the reader's start (a loaded machine may start it late).
	while (!started)
		std::this_thread::yield();
	std::this_thread::sleep_for(std::chrono::seconds(1));
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, w_at_a, &sctx));
	fi_cq_tagged_entry se;
	EXPECT_EQ(1, fi_cq_sread(a->cq, &se, 1, nullptr, 5000));  // also blocks, for the sender
	reader.join();
	ASSERT_EQ(1, result);
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(9u, got);
	EXPECT_GE(wall, 0.9);
	EXPECT_LT(wall, 5.0);
	printf("blocked fi_cq_sread: %.4f s CPU over %.3f s\n", cpu, wall);
	EXPECT_LT(cpu, 0.1 * wall) << "blocked reader used " << cpu << " s CPU in " << wall << " s";
}

TEST_F(RxmLoopback, WaitFdPollsReadableWhenACompletionArrives)
{
	Node w(info, FI_WAIT_FD);
	fi_addr_t w_at_a = a->insert(w);
	w.insert(*a);
	int fd = -1;
	ASSERT_EQ(0, fi_control(&w.cq->fid, FI_GETWAIT, &fd));
	ASSERT_GE(fd, 0);
	enum fi_wait_obj obj = FI_WAIT_NONE;
	ASSERT_EQ(0, fi_control(&w.cq->fid, FI_GETWAITOBJ, &obj));
	EXPECT_EQ(FI_WAIT_FD, obj);
	EXPECT_EQ(-FI_ENODATA, fi_control(&a->cq->fid, FI_GETWAIT, &fd));
	uint64_t v = 3, got = 0;
	int rctx, sctx;
	ASSERT_EQ(0, fi_recv(w.ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	fid *fids[] = {&w.cq->fid};
	EXPECT_EQ(0, fi_trywait(w.fabric, fids, 1));  // nothing pending: safe to block
	pollfd p{fd, POLLIN, 0};
	EXPECT_EQ(0, poll(&p, 1, 100));  // nothing sent yet
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, w_at_a, &sctx));
	// The application sleeps in poll() and reads when woken, as an event loop would.
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	fi_cq_tagged_entry e{};
	ssize_t n = -FI_EAGAIN;
	while (n == -FI_EAGAIN && std::chrono::steady_clock::now() < deadline) {
		a->poll();  // the sender side is driven by its own reads
		if (fi_trywait(w.fabric, fids, 1) == 0) {
			p.revents = 0;
			poll(&p, 1, 10);
		}
		n = fi_cq_read(w.cq, &e, 1);
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(&rctx, e.op_context);
	EXPECT_EQ(3u, got);
	// Drained: the fd is quiet again.
	p.revents = 0;
	EXPECT_EQ(0, poll(&p, 1, 0));
	// fi_cq_signal wakes a blocked reader.
	std::thread signaller([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		fi_cq_signal(w.cq);
	});
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(w.cq, &e, 1, nullptr, 10000));
	signaller.join();
	while (a->done.empty())
		a->poll();
}

TEST_F(RxmLoopback, PollSetOverACqDrivesItsEndpoints)
{
	// fi_poll over an rxm CQ (issue 17 item 9): each pass runs the progress of the endpoints
	// bound to it, so an application that only calls fi_poll sees its receive arrive.
	fid_poll *pollset = nullptr;
	fi_poll_attr attr{};
	ASSERT_EQ(0, fi_poll_open(b->domain, &attr, &pollset));
	ASSERT_EQ(0, fi_poll_add(pollset, &b->cq->fid, 0));
	EXPECT_EQ(-FI_EALREADY, fi_poll_add(pollset, &b->cq->fid, 0));
	void *contexts[4];
	EXPECT_EQ(0, fi_poll(pollset, contexts, 4));  // nothing yet
	uint64_t v = 9, got = 0;
	int rctx, sctx;
	ASSERT_EQ(0, fi_recv(b->ep, &got, sizeof(got), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_EQ(0, fi_send(a->ep, &v, sizeof(v), nullptr, b_at_a, &sctx));
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	int n = 0;
	while (n == 0 && std::chrono::steady_clock::now() < deadline) {
		a->poll();  // the sender is driven by its own reads
		n = fi_poll(pollset, contexts, 4);
	}
	ASSERT_EQ(1, n);
	EXPECT_EQ(nullptr, contexts[0]);  // the CQ's context (Node opens it without one)
	b->poll();
	ASSERT_EQ(1u, b->done.size());
	EXPECT_EQ(&rctx, b->done.front().entry.op_context);
	EXPECT_EQ(9u, got);
	EXPECT_EQ(0, fi_poll(pollset, contexts, 4));  // read: not reported again
	EXPECT_EQ(0, fi_poll_del(pollset, &b->cq->fid, 0));
	EXPECT_EQ(0, fi_close(&pollset->fid));
	while (a->done.empty() && std::chrono::steady_clock::now() < deadline)
		a->poll();
	EXPECT_EQ(1u, a->done.size());
}

TEST_F(RxmLoopback, EnableWithoutCqOrCounterFails)
{
	fid_ep *ep = nullptr;
	ASSERT_EQ(0, fi_endpoint(a->domain, info, &ep, nullptr));
	ASSERT_EQ(0, fi_ep_bind(ep, &a->av->fid, 0));
	EXPECT_EQ(-FI_ENOCQ, fi_enable(ep));
	ASSERT_EQ(0, fi_ep_bind(ep, &a->cq->fid, FI_RECV));
	EXPECT_EQ(0, fi_enable(ep));
	EXPECT_EQ(0, fi_close(&ep->fid));
}

// One CQ bound by two fi_ep_bind calls (FI_TRANSMIT, then FI_RECV) is one CQ to the
// endpoint: closing the endpoint leaves nothing of it on the CQ, which then closes.
TEST_F(RxmLoopback, CqBoundForEachDirectionSeparatelyIsReleasedOnClose)
{
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	fid_cq *cq = nullptr;
	ASSERT_EQ(0, fi_cq_open(a->domain, &cq_attr, &cq, nullptr));
	fid_ep *ep = nullptr;
	ASSERT_EQ(0, fi_endpoint(a->domain, info, &ep, nullptr));
	ASSERT_EQ(0, fi_ep_bind(ep, &a->av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_RECV));
	EXPECT_GT(0, fi_ep_bind(ep, &cq->fid, FI_RECV)); // that direction has its CQ
	ASSERT_EQ(0, fi_enable(ep));
	fi_cq_tagged_entry entry;
	EXPECT_EQ(-FI_EAGAIN, fi_cq_read(cq, &entry, 1)); // progresses the endpoint
	EXPECT_EQ(-FI_EBUSY, fi_close(&cq->fid));
	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
}

// A failed fi_enable (here: the listening address is taken) releases what it had made, and a
// later fi_enable, once the address is free, starts the endpoint whole: it listens there and
// receives.
TEST_F(RxmLoopback, EnableAfterFailedEnableStartsWhole)
{
	// A domain whose core listener must take a's address (rxm listens on the domain's).
	fi_info *taken = fi_dupinfo(info);
	ASSERT_NE(nullptr, taken);
	free(taken->src_addr);
	taken->src_addr = malloc(a->name_len);
	ASSERT_NE(nullptr, taken->src_addr);
	memcpy(taken->src_addr, a->name, a->name_len);
	taken->src_addrlen = a->name_len;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_ep *ep = nullptr;
	ASSERT_EQ(0, fi_fabric(taken->fabric_attr, &fabric, nullptr));
	ASSERT_EQ(0, fi_domain(fabric, taken, &domain, nullptr));
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	ASSERT_EQ(0, fi_av_open(domain, &av_attr, &av, nullptr));
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_TAGGED;
	ASSERT_EQ(0, fi_cq_open(domain, &cq_attr, &cq, nullptr));
	ASSERT_EQ(0, fi_endpoint(domain, taken, &ep, nullptr));
	ASSERT_EQ(0, fi_ep_bind(ep, &av->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
	EXPECT_GT(0, fi_enable(ep)); // a listens there
	uint8_t name[64];
	size_t len = sizeof(name);
	EXPECT_EQ(-FI_EOPBADSTATE, fi_getname(&ep->fid, name, &len));

	a.reset(); // frees the address
	ASSERT_EQ(0, fi_enable(ep));
	len = sizeof(name);
	ASSERT_EQ(0, fi_getname(&ep->fid, name, &len));
	uint8_t got = 0, sent = 42;
	ASSERT_EQ(0, fi_recv(ep, &got, 1, nullptr, FI_ADDR_UNSPEC, &got));
	// b still has a's address in its AV: that is now this endpoint.
	ASSERT_EQ(0, fi_send(b->ep, &sent, 1, nullptr, a_at_b, &sent));
	fi_cq_tagged_entry entry{};
	ssize_t n = -FI_EAGAIN;
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	while (n == -FI_EAGAIN && std::chrono::steady_clock::now() < deadline) {
		b->poll();
		n = fi_cq_read(cq, &entry, 1);
	}
	EXPECT_EQ(1, n);
	EXPECT_EQ(&got, entry.op_context);
	EXPECT_EQ(42, got);
	wait_for(*b, &sent);

	EXPECT_EQ(0, fi_close(&ep->fid));
	EXPECT_EQ(0, fi_close(&cq->fid));
	EXPECT_EQ(0, fi_close(&av->fid));
	EXPECT_EQ(0, fi_close(&domain->fid));
	EXPECT_EQ(0, fi_close(&fabric->fid));
	fi_freeinfo(taken);
}

TEST(RxmCounters, CountSendsReceivesAndErrors)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup(rxm_test::provider());
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = rxm_test::mr_mode();
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
#ifndef HAVE_TCP
	if (ret && !rxm_test::provider_must_exist())
		GTEST_SKIP();
#endif
	ASSERT_EQ(0, ret);
	{
		Node a(info), b(info);
		fi_addr_t b_at_a = a.insert(b);
		b.insert(a);
		fi_cntr_attr attr{};
		attr.events = FI_CNTR_EVENTS_COMP;
		fid_cntr *sent = nullptr, *received = nullptr;
		ASSERT_EQ(0, fi_cntr_open(a.domain, &attr, &sent, nullptr));
		ASSERT_EQ(0, fi_cntr_open(b.domain, &attr, &received, nullptr));
		// Counters bind before enable; these endpoints are enabled, so use fresh ones.
		fid_ep *tx = nullptr, *rx = nullptr;
		ASSERT_EQ(0, fi_endpoint(a.domain, info, &tx, nullptr));
		ASSERT_EQ(0, fi_endpoint(b.domain, info, &rx, nullptr));
		ASSERT_EQ(0, fi_ep_bind(tx, &a.av->fid, 0));
		ASSERT_EQ(0, fi_ep_bind(rx, &b.av->fid, 0));
		ASSERT_EQ(0, fi_ep_bind(tx, &sent->fid, FI_SEND));
		ASSERT_EQ(0, fi_ep_bind(rx, &received->fid, FI_RECV));
		// Remote-side counters come with FI_RMA_EVENT (fi_endpoint(3)), which rxm offers
		// over a core that counts remote RMA (tcp).
		EXPECT_EQ((info->caps & FI_RMA_EVENT) ? 0 : -FI_EBADFLAGS,
			  fi_ep_bind(rx, &received->fid, FI_REMOTE_WRITE));
		ASSERT_EQ(0, fi_enable(tx));
		ASSERT_EQ(0, fi_enable(rx));
		uint8_t name[64];
		size_t len = sizeof(name);
		ASSERT_EQ(0, fi_getname(&rx->fid, name, &len));
		fi_addr_t rx_addr;
		ASSERT_EQ(1, fi_av_insert(a.av, name, 1, &rx_addr, 0, nullptr));
		uint32_t v = 1, in[3], small;
		for (int i = 0; i < 3; i++)
			ASSERT_EQ(0, fi_recv(rx, &in[i], sizeof(in[i]), nullptr, FI_ADDR_UNSPEC, nullptr));
		ASSERT_EQ(0, fi_recv(rx, &small, 1, nullptr, FI_ADDR_UNSPEC, nullptr)); // truncates
		for (int i = 0; i < 4; i++)
			ASSERT_EQ(0, fi_send(tx, &v, sizeof(v), nullptr, rx_addr, nullptr));
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
		// Reading a counter progresses only its own endpoint: read all of them each round.
		for (;;) {
			bool sent_all = fi_cntr_read(sent) >= 4;
			bool received_all = fi_cntr_read(received) >= 3;
			bool truncated = fi_cntr_readerr(received) >= 1;
			if ((sent_all && received_all && truncated) ||
			    std::chrono::steady_clock::now() > deadline)
				break;
		}
		EXPECT_EQ(4u, fi_cntr_read(sent));
		EXPECT_EQ(3u, fi_cntr_read(received));
		EXPECT_EQ(1u, fi_cntr_readerr(received));
		EXPECT_EQ(0, fi_cntr_wait(sent, 4, 100));
		EXPECT_EQ(-FI_ETIMEDOUT, fi_cntr_wait(sent, 5, 50));
		EXPECT_EQ(0, fi_cntr_set(sent, 10));
		EXPECT_EQ(0, fi_cntr_add(sent, 2));
		EXPECT_EQ(12u, fi_cntr_read(sent));
		(void)b_at_a;
		EXPECT_EQ(0, fi_close(&tx->fid));
		EXPECT_EQ(0, fi_close(&rx->fid));
		EXPECT_EQ(0, fi_close(&sent->fid));
		EXPECT_EQ(0, fi_close(&received->fid));
	}
	fi_freeinfo(info);
}

TEST_F(RxmLoopback, BadArgumentsAreRefused)
{
	char buf[8] = {};
	EXPECT_EQ(-FI_EINVAL, fi_send(a->ep, buf, sizeof(buf), nullptr, 12345, nullptr));
	iovec iov[5] = {};
	EXPECT_EQ(-FI_EINVAL, fi_sendv(a->ep, iov, nullptr, 5, b_at_a, nullptr));
	EXPECT_EQ(-FI_EINVAL, fi_recvv(a->ep, iov, nullptr, 5, FI_ADDR_UNSPEC, nullptr));
}

TEST_F(RxmLoopback, AtomicMsgFormsRefuseUnknownFlags)
{
	// Bit 15 is defined by no 1.17 header; the documented flags still pass the check.
	constexpr uint64_t kUnknown = 1ULL << 15;
	uint64_t v = 1, result = 0, cmp = 0;
	fi_ioc ioc{&v, 1}, res{&result, 1}, cmpv{&cmp, 1};
	fi_rma_ioc rma{0, 1, 1};
	fi_msg_atomic msg{&ioc, nullptr, 1, b_at_a, &rma, 1, FI_UINT64, FI_SUM, nullptr, 0};
	EXPECT_EQ(-FI_EBADFLAGS, fi_atomicmsg(a->ep, &msg, kUnknown));
	EXPECT_EQ(-FI_EBADFLAGS, fi_fetch_atomicmsg(a->ep, &msg, &res, nullptr, 1, kUnknown));
	msg.op = FI_CSWAP;
	EXPECT_EQ(-FI_EBADFLAGS, fi_compare_atomicmsg(a->ep, &msg, &cmpv, nullptr, 1, &res,
						      nullptr, 1, kUnknown));
	// A documented flag is accepted: the call goes through to the (absent) key and fails
	// at the target, not at the flag check.
	msg.op = FI_SUM;
	int ctx;
	msg.context = &ctx;
	ASSERT_EQ(0, fi_atomicmsg(a->ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE));
	EXPECT_TRUE(wait_for(*a, &ctx).error);
}

} // namespace
