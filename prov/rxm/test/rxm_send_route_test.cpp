// Where a send goes once rxm remembers the connection of an AV entry (conn_for_send's
// routes): every change that moves an fi_addr to another connection must be seen on the very
// next send. An entry removed and its slot given to another peer, an entry removed for good,
// the same peer removed and inserted again, a connection closed by its peer, a peer restarted
// on the same address (sending first or being sent to first); and on the receive side the
// FI_SOURCE of a peer inserted only after its first message. Each test first sends once, so
// the route is remembered before the change.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "prov/rxm/test/rxm_test_connections.h"
#include "src/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

namespace {

#ifdef HAVE_TCP
fi_provider *(*volatile route_tcp)() = ofi_tcp_provider_init;
fi_provider *(*volatile route_rxm)() = ofi_rxm_provider_init;
#endif

// An RDM endpoint (rxm_test_node.h) that keeps what its CQ reported, with the source of each
// completion.
struct Station : rxm_test::RdmNode {
	explicit Station(fi_info *info)
		: RdmNode(info, {.cq_format = FI_CQ_FORMAT_DATA, .cq_size = 256})
	{
	}
	void poll()
	{
		fi_cq_data_entry e[8];
		fi_addr_t src[8];
		ssize_t n = fi_cq_readfrom(cq, e, 8, src);
		for (ssize_t i = 0; i < n; i++) {
			if (e[i].flags & FI_RECV) {
				received.push_back(e[i].op_context);
				sources.push_back(src[i]);
			} else {
				sent.push_back(e[i].op_context);
			}
		}
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(cq, &err, 0) == 1)
				failed.push_back(err.op_context);
		}
	}

	size_t connections() const { return rxm_test::connections(*this); }

	std::vector<void *> received, sent, failed;
	std::vector<fi_addr_t> sources;
};

// Restarting a peer on the same address and counting connections are tcp's.
class RxmSendRoute : public rxm_test::TcpRxmConnections {
protected:
	// Polls the stations until done() holds (at most 10 s).
	static bool poll_until(const std::vector<Station *> &all, const std::function<bool()> &done)
	{
		return rxm_test::poll_until(all, done);
	}
	static void poll_for(const std::vector<Station *> &all, int ms)
	{
		auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
		while (std::chrono::steady_clock::now() < deadline)
			for (Station *s : all)
				s->poll();
	}
	static bool has(const std::vector<void *> &v, void *x)
	{
		return std::find(v.begin(), v.end(), x) != v.end();
	}

	// from sends `value` to dest; `to` has a receive posted for it. Both complete.
	static void deliver(Station &from, fi_addr_t dest, Station &to, uint32_t value,
			    std::vector<Station *> all)
	{
		uint32_t in = 0;
		int rctx = 0, sctx = 0;
		ASSERT_EQ(0, fi_recv(to.ep, &in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
		ASSERT_EQ(0, fi_send(from.ep, &value, sizeof(value), nullptr, dest, &sctx));
		ASSERT_TRUE(poll_until(all, [&] {
			return has(to.received, &rctx) && has(from.sent, &sctx);
		})) << "value " << value << " not delivered";
		EXPECT_EQ(value, in);
		to.received.clear(); // contexts on this stack frame are reused by the next call
		from.sent.clear();
	}

	// A copy of info whose endpoints listen on the address `s` listens on.
	fi_info *info_at(const Station &s)
	{
		fi_info *at = fi_dupinfo(info);
		EXPECT_NE(nullptr, at->src_addr);
		EXPECT_EQ(sizeof(sockaddr_in), s.name_len);
		memcpy(at->src_addr, s.name, sizeof(sockaddr_in));
		at->src_addrlen = sizeof(sockaddr_in);
		return at;
	}

};

TEST_F(RxmSendRoute, SlotGivenToAnotherPeerSendsToTheNewPeer)
{
	Station hub(info), first(info), second(info);
	fi_addr_t slot = hub.insert(first);
	deliver(hub, slot, first, 1, {&hub, &first, &second});
	ASSERT_EQ(0, fi_av_remove(hub.av, &slot, 1, 0));
	ASSERT_EQ(slot, hub.insert(second)); // FI_AV_TABLE hands out the lowest free index
	// The first peer has a receive posted too: the message must not reach it.
	uint32_t stray = 0;
	int stray_ctx = 0;
	ASSERT_EQ(0, fi_recv(first.ep, &stray, sizeof(stray), nullptr, FI_ADDR_UNSPEC, &stray_ctx));
	deliver(hub, slot, second, 2, {&hub, &first, &second});
	poll_for({&hub, &first, &second}, 50);
	EXPECT_FALSE(has(first.received, &stray_ctx)) << "the old peer got " << stray;
	EXPECT_EQ(2u, hub.connections());
}

TEST_F(RxmSendRoute, RemovedEntryRefusesSends)
{
	Station hub(info), peer(info);
	fi_addr_t addr = hub.insert(peer);
	deliver(hub, addr, peer, 1, {&hub, &peer});
	ASSERT_EQ(0, fi_av_remove(hub.av, &addr, 1, 0));
	uint32_t v = 2;
	EXPECT_EQ(-FI_EINVAL, fi_send(hub.ep, &v, sizeof(v), nullptr, addr, nullptr));
	EXPECT_EQ(-FI_EINVAL, fi_inject(hub.ep, &v, sizeof(v), addr));
}

TEST_F(RxmSendRoute, PeerRemovedAndInsertedAgainKeepsItsConnection)
{
	Station hub(info), peer(info);
	fi_addr_t addr = hub.insert(peer);
	deliver(hub, addr, peer, 1, {&hub, &peer});
	ASSERT_EQ(0, fi_av_remove(hub.av, &addr, 1, 0));
	ASSERT_EQ(addr, hub.insert(peer));
	deliver(hub, addr, peer, 2, {&hub, &peer});
	EXPECT_EQ(1u, hub.connections());
	EXPECT_EQ(1u, peer.connections());
}

TEST_F(RxmSendRoute, ConnectionClosedByItsPeerIsNotReused)
{
	Station hub(info);
	auto peer = std::make_unique<Station>(info);
	fi_addr_t addr = hub.insert(*peer);
	deliver(hub, addr, *peer, 1, {&hub, peer.get()});
	fi_info *same = info_at(*peer);
	peer.reset();
	ASSERT_TRUE(poll_until({&hub}, [&] { return hub.connections() == 0; }));
	// A new endpoint on the old address: the hub sends first, on a new connection.
	peer = std::make_unique<Station>(same);
	deliver(hub, addr, *peer, 2, {&hub, peer.get()});
	EXPECT_EQ(1u, hub.connections());
	peer.reset();
	fi_freeinfo(same);
}

TEST_F(RxmSendRoute, PeerRestartedOnTheSameAddressIsReachedOnItsNewConnection)
{
	Station hub(info);
	auto peer = std::make_unique<Station>(info);
	fi_addr_t addr = hub.insert(*peer);
	deliver(hub, addr, *peer, 1, {&hub, peer.get()});
	fi_info *same = info_at(*peer);
	// The peer restarts and talks first, before the hub has read its old connection's end:
	// the hub replaces that connection, and its next send must take the new one.
	peer.reset();
	peer = std::make_unique<Station>(same);
	fi_addr_t hub_at_peer = peer->insert(hub);
	deliver(*peer, hub_at_peer, hub, 2, {&hub, peer.get()});
	deliver(hub, addr, *peer, 3, {&hub, peer.get()});
	EXPECT_TRUE(hub.failed.empty());
	peer.reset();
	fi_freeinfo(same);
}

TEST_F(RxmSendRoute, SourceOfAPeerInsertedAfterItsFirstMessage)
{
	Station hub(info), peer(info);
	fi_addr_t hub_at_peer = peer.insert(hub);
	deliver(peer, hub_at_peer, hub, 1, {&hub, &peer});
	ASSERT_EQ(1u, hub.sources.size());
	EXPECT_EQ(FI_ADDR_NOTAVAIL, hub.sources[0]);
	fi_addr_t peer_at_hub = hub.insert(peer);
	deliver(peer, hub_at_peer, hub, 2, {&hub, &peer});
	ASSERT_EQ(2u, hub.sources.size());
	EXPECT_EQ(peer_at_hub, hub.sources[1]);
	// Removed again: unknown once more.
	ASSERT_EQ(0, fi_av_remove(hub.av, &peer_at_hub, 1, 0));
	deliver(peer, hub_at_peer, hub, 3, {&hub, &peer});
	ASSERT_EQ(3u, hub.sources.size());
	EXPECT_EQ(FI_ADDR_NOTAVAIL, hub.sources[2]);
}

TEST_F(RxmSendRoute, UserIdsAreRefusedSoAnFiAddrIsAlwaysAnAvIndex)
{
	// Routes are kept by AV index: FI_AV_USER_ID (which would make completions report an
	// application value instead) is not offered, and an insert asking for it is refused.
	Station hub(info), peer(info);
	fi_addr_t addr = 12345;
	EXPECT_EQ(-FI_EBADFLAGS, fi_av_insert(hub.av, peer.name, 1, &addr, FI_AV_USER_ID, nullptr));
	addr = hub.insert(peer);
	deliver(hub, addr, peer, 1, {&hub, &peer});
}

} // namespace
