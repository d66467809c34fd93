// What an endpoint gives back when its connection ends: posted receives and sends complete
// with FI_ECANCELED (peer close, local fi_shutdown), and fi_close leaves no EQ event that
// names the closed endpoint.
#include "prov/tcp/test/tcp_test_pair.h"
#include "prov/util/domain.h"
#include "prov/util/fid_object.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

using tcp_test::EqEvent;
using tcp_test::TcpPair;

namespace {

// Waits (progressing) until `eq` holds an event, without taking it.
bool eq_has_event(fid_eq *eq)
{
	uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	uint32_t event = 0;
	for (int i = 0; i < 5000; i++) {
		ssize_t ret = fi_eq_read(eq, &event, buf, sizeof(buf), FI_PEEK);
		if (ret > 0 || ret == -FI_EAVAIL)
			return true;
		std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
	return false;
}

// Reads `count` completions of `cq` that must all be FI_ECANCELED errors, in order.
std::vector<void *> cancelled_contexts(TcpPair &pair, fid_cq *cq, size_t count)
{
	std::vector<void *> contexts;
	for (size_t i = 0; i < count; i++) {
		fi_cq_data_entry entry{};
		fi_cq_err_entry err{};
		ssize_t ret = pair.wait_cq(cq, &entry, &err);
		EXPECT_EQ(-FI_EAVAIL, ret) << "completion " << i;
		if (ret != -FI_EAVAIL)
			break;
		EXPECT_EQ(FI_ECANCELED, err.err);
		EXPECT_TRUE(err.flags & FI_RECV);
		contexts.push_back(err.op_context);
	}
	return contexts;
}

} // namespace

TEST(TcpDisconnect, PeerCloseCancelsPostedReceives)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	char a[16], b[16], c[16];
	ASSERT_EQ(0, fi_recv(pair.client, a, sizeof(a), nullptr, 0, a));
	ASSERT_EQ(0, fi_recv(pair.client, b, sizeof(b), nullptr, 0, b));
	ASSERT_EQ(0, fi_recv(pair.client, c, sizeof(c), nullptr, 0, c));
	ASSERT_EQ(0, fi_close(&pair.server->fid));
	pair.server = nullptr;
	EqEvent ev = pair.wait_eq(pair.client_eq);
	EXPECT_EQ(FI_SHUTDOWN, ev.event);
	// The buffers were handed back before the event was raised.
	std::vector<void *> got = cancelled_contexts(pair, pair.client_cq, 3);
	EXPECT_EQ((std::vector<void *>{a, b, c}), got);
	EXPECT_TRUE(pair.cq_stays_empty(pair.client_cq));
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&pair.client->fid, a));
	EXPECT_EQ(-FI_ENOTCONN, fi_recv(pair.client, a, sizeof(a), nullptr, 0, a));
}

TEST(TcpDisconnect, LocalShutdownCancelsBeforeReturning)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	char a[16];
	ASSERT_EQ(0, fi_recv(pair.server, a, sizeof(a), nullptr, 0, a));
	ASSERT_EQ(0, fi_shutdown(pair.server, 0));
	// fi_cm: canceled completions are written before fi_shutdown returns.
	fi_cq_data_entry entry{};
	ASSERT_EQ(-FI_EAVAIL, fi_cq_read(pair.server_cq, &entry, 1));
	fi_cq_err_entry err{};
	ASSERT_EQ(1, fi_cq_readerr(pair.server_cq, &err, 0));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(a, err.op_context);
	EXPECT_EQ(FI_SHUTDOWN, pair.wait_eq(pair.client_eq).event);
}

TEST(TcpDisconnect, ReceivesPostedBeforeAcceptComeBackOnShutdown)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_EQ(0, fi_connect(pair.client, pair.listen_addr.data(), nullptr, 0));
	EqEvent req = pair.wait_eq(pair.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	fid_ep *ep = nullptr;
	ASSERT_EQ(0, fi_endpoint(pair.domain, req.info, &ep, nullptr));
	fi_freeinfo(req.info);
	ASSERT_EQ(0, fi_ep_bind(ep, &pair.server_eq->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &pair.server_cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	char a[16];
	ASSERT_EQ(0, fi_recv(ep, a, sizeof(a), nullptr, 0, a));
	ASSERT_EQ(0, fi_shutdown(ep, 0));
	std::vector<void *> got = cancelled_contexts(pair, pair.server_cq, 1);
	EXPECT_EQ((std::vector<void *>{a}), got);
	EXPECT_EQ(0, fi_close(&ep->fid));
}

TEST(TcpDisconnect, CloseDropsTheEndpointsUnreadEvents)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	ASSERT_EQ(0, fi_close(&pair.server->fid));
	pair.server = nullptr;
	// The client's FI_SHUTDOWN is queued, unread, when the client endpoint is closed.
	ASSERT_TRUE(eq_has_event(pair.client_eq));
	ASSERT_EQ(0, fi_close(&pair.client->fid));
	pair.client = nullptr;
	uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	uint32_t event = 0;
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(pair.client_eq, &event, buf, sizeof(buf), 0));
}

TEST(TcpDisconnect, CloseKeepsOtherEndpointsEvents)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	// A second, never connected endpoint on the client's EQ is closed while the first
	// endpoint's FI_SHUTDOWN waits: that event stays.
	fid_ep *other = nullptr;
	ASSERT_EQ(0, fi_endpoint(pair.domain, pair.info, &other, nullptr));
	ASSERT_EQ(0, fi_ep_bind(other, &pair.client_eq->fid, 0));
	ASSERT_EQ(0, fi_close(&pair.server->fid));
	pair.server = nullptr;
	ASSERT_TRUE(eq_has_event(pair.client_eq));
	ASSERT_EQ(0, fi_close(&other->fid));
	EqEvent ev = pair.wait_eq(pair.client_eq);
	EXPECT_EQ(FI_SHUTDOWN, ev.event);
	EXPECT_EQ(&pair.client->fid, ev.fid);
}

// A stream polled busily leaves the engine's epoll set (prov/util README, may_leave_epoll):
// its peer's close must still wake a thread asleep in fi_eq_sread, which watches the
// domain's engine fd and never prepares a sleep on it (the engine's lease timer).
TEST(TcpDisconnect, ABusyPolledStreamStillWakesAnEqSleeperAtThePeersClose)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	auto *domain = util::fid_cast<util::Domain>(&pair.domain->fid, FI_CLASS_DOMAIN);
	ASSERT_NE(nullptr, domain);
	auto out = [&] { return domain->engine().fds_out_of_epoll() == 1; };
	// 300 messages, then more until the stream is seen out of the set right after one: on
	// a slow run (valgrind) the 10 ms lease can put it back before the 300th, and it leaves
	// again 64 busy passes later.
	char in[8];
	for (int i = 0; i < 300 || (!out() && i < 5000); i++) {
		ASSERT_EQ(0, fi_recv(pair.client, in, sizeof(in), nullptr, 0, in));
		ASSERT_EQ(0, fi_inject(pair.server, "message", 8, 0));
		fi_cq_data_entry entry{};
		ssize_t ret;
		do
			ret = fi_cq_read(pair.client_cq, &entry, 1); // spins: the stream is hot
		while (ret == -FI_EAGAIN);
		ASSERT_EQ(1, ret) << "message " << i;
	}
	ASSERT_TRUE(out()) << "the busy stream never left the epoll set"; // what this is about
	ASSERT_EQ(0, fi_recv(pair.client, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(0, fi_close(&pair.server->fid));
	pair.server = nullptr;
	// No CQ read from here on: only the EQ sleeper can drive the domain.
	uint32_t event = 0;
	uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	ssize_t ret = fi_eq_sread(pair.client_eq, &event, buf, sizeof(buf), 5000, 0);
	ASSERT_GT(ret, 0) << fi_strerror(static_cast<int>(-ret));
	EXPECT_EQ(FI_SHUTDOWN, event);
}
