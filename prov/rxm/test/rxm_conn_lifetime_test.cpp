// Lifetime of ofi_rxm connections over tcp on loopback: a connection whose peer closed is
// released (also when the peer's address was removed from the AV, which keeps a live
// connection); many connections failing at once (each core endpoint flushing its posted
// receives) leave the endpoint working. The count of live connections is read through the endpoint object.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "prov/rxm/test/rxm_test_connections.h"
#include "src/registry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace {

#ifdef HAVE_TCP
fi_provider *(*volatile keep_tcp)() = ofi_tcp_provider_init;
fi_provider *(*volatile keep_rxm)() = ofi_rxm_provider_init;
#endif

// An RDM endpoint (rxm_test_node.h) that counts its successful and failed completions.
struct Peer : rxm_test::RdmNode {
	explicit Peer(fi_info *info)
		: RdmNode(info, {.cq_format = FI_CQ_FORMAT_DATA, .cq_size = 1024})
	{
	}
	// Reads the CQ once (progress); counts successes and errors.
	void poll()
	{
		fi_cq_data_entry e[16];
		ssize_t n = fi_cq_read(cq, e, 16);
		if (n > 0)
			completions += static_cast<size_t>(n);
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(cq, &err, 0) == 1)
				errors++;
		}
	}

	size_t connections() const { return rxm_test::connections(*this); }

	size_t completions = 0, errors = 0;
};

// These count tcp's core endpoints going down (and its flushed receives).
class RxmConnLifetime : public rxm_test::TcpRxmConnections {
protected:
	// Polls every peer until done() holds (at most 10 s).
	static bool poll_until(const std::vector<Peer *> &peers, const std::function<bool()> &done)
	{
		return rxm_test::poll_until(peers, done);
	}

	// from sends one message to `to`, which receives it.
	static void exchange(Peer &from, fi_addr_t dest, Peer &to, std::vector<Peer *> all)
	{
		char out[32] = "hello", in[32] = {};
		size_t sent = from.completions, got = to.completions;
		ASSERT_EQ(0, fi_recv(to.ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, in));
		ASSERT_EQ(0, fi_send(from.ep, out, sizeof(out), nullptr, dest, out));
		ASSERT_TRUE(poll_until(all, [&] {
			return from.completions > sent && to.completions > got;
		}));
		EXPECT_STREQ("hello", in);
	}
};

TEST_F(RxmConnLifetime, ClosedPeersConnectionsAreReleased)
{
	Peer hub(info);
	for (int round = 0; round < 20; round++) {
		auto peer = std::make_unique<Peer>(info);
		fi_addr_t dest = hub.insert(*peer);
		exchange(hub, dest, *peer, {&hub, peer.get()});
		ASSERT_EQ(1u, hub.connections()) << "round " << round;
		peer.reset(); // the hub sees FI_SHUTDOWN
		ASSERT_TRUE(poll_until({&hub}, [&] { return hub.connections() == 0; }))
			<< "round " << round << ": " << hub.connections() << " connections";
	}
	EXPECT_EQ(0u, hub.errors);
}

TEST_F(RxmConnLifetime, AvRemoveKeepsTheConnectionUntilThePeerCloses)
{
	Peer a(info);
	auto b = std::make_unique<Peer>(info);
	fi_addr_t b_at_a = a.insert(*b);
	fi_addr_t a_at_b = b->insert(a);
	exchange(a, b_at_a, *b, {&a, b.get()});
	ASSERT_EQ(0, fi_av_remove(a.av, &b_at_a, 1, 0));
	// The peer may still send: what it sends is delivered (its source unknown to A).
	exchange(*b, a_at_b, a, {&a, b.get()});
	EXPECT_EQ(1u, a.connections());
	b.reset();
	EXPECT_TRUE(poll_until({&a}, [&] { return a.connections() == 0; }))
		<< a.connections() << " connections";
	EXPECT_EQ(0u, a.errors);
}

TEST_F(RxmConnLifetime, MessagesSentBeforeThePeerClosedAreDelivered)
{
	Peer hub(info);
	auto peer = std::make_unique<Peer>(info);
	fi_addr_t hub_at_peer = peer->insert(hub);
	exchange(*peer, hub_at_peer, hub, {&hub, peer.get()});
	// More messages than the hub has receive buffers for one connection, sent while the hub
	// does not progress; the peer closes as soon as its sends completed.
	constexpr int kCount = 200;
	std::vector<uint32_t> out(kCount), in(kCount, 0);
	// Counted from before the first send: a send refused with -FI_EAGAIN (the peer's share
	// of the bounce buffers is half the pool) polls, which may already complete earlier ones.
	size_t sent = peer->completions;
	for (int i = 0; i < kCount; i++) {
		out[i] = 1000 + i;
		ssize_t ret;
		while ((ret = fi_send(peer->ep, &out[i], sizeof(out[i]), nullptr, hub_at_peer,
				      nullptr)) == -FI_EAGAIN)
			peer->poll();
		ASSERT_EQ(0, ret);
	}
	ASSERT_TRUE(poll_until({peer.get()}, [&] { return peer->completions - sent == kCount; }));
	peer.reset();
	size_t got = hub.completions;
	for (int i = 0; i < kCount; i++)
		ASSERT_EQ(0, fi_recv(hub.ep, &in[i], sizeof(in[i]), nullptr, FI_ADDR_UNSPEC, nullptr));
	EXPECT_TRUE(poll_until({&hub}, [&] { return hub.completions - got == kCount; }))
		<< hub.completions - got << " of " << kCount << " delivered";
	for (int i = 0; i < kCount; i++)
		EXPECT_EQ(1000u + i, in[i]) << "message " << i;
	EXPECT_TRUE(poll_until({&hub}, [&] { return hub.connections() == 0; }));
	EXPECT_EQ(0u, hub.errors);
}

TEST_F(RxmConnLifetime, ManyPeersClosingAtOnceLeaveTheHubWorking)
{
	Peer hub(info);
	std::vector<std::unique_ptr<Peer>> peers;
	std::vector<Peer *> all{&hub};
	for (int i = 0; i < 8; i++) {
		peers.push_back(std::make_unique<Peer>(info));
		all.push_back(peers.back().get());
	}
	for (auto &p : peers) {
		fi_addr_t hub_at_p = p->insert(hub);
		exchange(*p, hub_at_p, hub, all);
	}
	ASSERT_EQ(8u, hub.connections());
	// All close before the hub progresses: their core endpoints' receives are flushed at
	// once (without shared receive contexts, a full set of buffers per connection).
	peers.clear();
	ASSERT_TRUE(poll_until({&hub}, [&] { return hub.connections() == 0; }))
		<< hub.connections() << " connections left";
	Peer late(info);
	fi_addr_t late_at_hub = hub.insert(late);
	exchange(hub, late_at_hub, late, {&hub, &late});
	EXPECT_EQ(0u, hub.errors);
}

} // namespace
