// Connection management through the public API: connect/accept with CM data, reject with
// data, refused connects, shutdown, names and IPv6.
#include "prov/tcp/test/tcp_test_pair.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

#include <cstring>

#include <unistd.h>

using tcp_test::EqEvent;
using tcp_test::TcpPair;

TEST(TcpCm, ConnectAcceptCarriesCmDataBothWays)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	size_t size = 0, len = sizeof(size);
	ASSERT_EQ(0, fi_getopt(&pair.client->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &size,
			       &len));
	EXPECT_GE(size, 256u);
	std::string big(256, 'q');
	ASSERT_TRUE(pair.connect(big, "welcome"));

	// Names: the client's peer is the listener; the server's peer is the client.
	uint8_t peer[128], name[128];
	size_t peer_len = sizeof(peer), name_len = sizeof(name);
	ASSERT_EQ(0, fi_getpeer(pair.client, peer, &peer_len));
	EXPECT_EQ(pair.listen_addr.size(), peer_len);
	EXPECT_EQ(0, memcmp(peer, pair.listen_addr.data(), peer_len));
	ASSERT_EQ(0, fi_getname(&pair.client->fid, name, &name_len));
	peer_len = sizeof(peer);
	ASSERT_EQ(0, fi_getpeer(pair.server, peer, &peer_len));
	EXPECT_EQ(0, memcmp(peer, name, name_len));

	size_t tiny = 2;
	EXPECT_EQ(-FI_ETOOSMALL, fi_getname(&pair.client->fid, name, &tiny));
	EXPECT_EQ(name_len, tiny);
}

TEST(TcpCm, OversizedCmDataIsRefused)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	std::string huge(257, 'x');
	EXPECT_EQ(-FI_EINVAL, fi_connect(pair.client, pair.listen_addr.data(), huge.data(),
					 huge.size()));
}

TEST(TcpCm, RejectDeliversRejectDataToConnector)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_EQ(0, fi_connect(pair.client, pair.listen_addr.data(), "hi", 2));
	EqEvent req = pair.wait_eq(pair.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	ASSERT_EQ(0, fi_reject(pair.pep, req.info->handle, "go away", 8));
	fi_freeinfo(req.info);
	EqEvent err = pair.wait_eq(pair.client_eq);
	ASSERT_EQ(-FI_EAVAIL, err.ret);
	EXPECT_EQ(FI_ECONNREFUSED, err.error.err);
	EXPECT_EQ(&pair.client->fid, err.error.fid);
	ASSERT_EQ(8u, err.err_data.size());
	EXPECT_STREQ("go away", reinterpret_cast<const char *>(err.err_data.data()));
}

TEST(TcpCm, ClosingListenerReleasesUnansweredRequests)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_EQ(0, fi_connect(pair.client, pair.listen_addr.data(), nullptr, 0));
	EqEvent req = pair.wait_eq(pair.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	ASSERT_EQ(0, fi_close(&pair.pep->fid));
	pair.pep = nullptr;
	// The connector hears that nobody will answer.
	EqEvent err = pair.wait_eq(pair.client_eq);
	ASSERT_EQ(-FI_EAVAIL, err.ret);
	EXPECT_EQ(FI_ECONNREFUSED, err.error.err);
	// The stale request cannot be accepted any more.
	fid_ep *ep = nullptr;
	EXPECT_EQ(-FI_ECONNABORTED, fi_endpoint(pair.domain, req.info, &ep, nullptr));
	fi_freeinfo(req.info);
}

// An FI_CONNREQ still unread when its listener closes goes with it (its handle would name a
// request nobody can answer), and its connector is rejected rather than left waiting.
TEST(TcpCm, ClosingListenerDropsItsUnreadRequests)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_EQ(0, fi_connect(pair.client, pair.listen_addr.data(), "hi", 2));
	// Progress until the request is queued, without taking it.
	alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 64];
	uint32_t event = 0;
	ssize_t ret = -FI_EAGAIN;
	for (int i = 0; i < 5000 && ret == -FI_EAGAIN; i++) {
		ret = fi_eq_read(pair.server_eq, &event, buf, sizeof(buf), FI_PEEK);
		if (ret == -FI_EAGAIN)
			usleep(1000);
	}
	ASSERT_GE(ret, static_cast<ssize_t>(sizeof(fi_eq_cm_entry)));
	ASSERT_EQ(FI_CONNREQ, event);
	ASSERT_EQ(0, fi_close(&pair.pep->fid));
	pair.pep = nullptr;
	EXPECT_EQ(-FI_EAGAIN, fi_eq_read(pair.server_eq, &event, buf, sizeof(buf), 0));
	EqEvent err = pair.wait_eq(pair.client_eq);
	ASSERT_EQ(-FI_EAVAIL, err.ret);
	EXPECT_EQ(FI_ECONNREFUSED, err.error.err);
}

TEST(TcpCm, RejectWithBadHandleIsInvalid)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	EXPECT_EQ(-FI_EINVAL, fi_reject(pair.pep, &pair.client->fid, nullptr, 0));
	EXPECT_EQ(-FI_EINVAL, fi_reject(pair.pep, nullptr, nullptr, 0));
}

TEST(TcpCm, ConnectToClosedPortBecomesEqError)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	sockaddr_in dest{};
	dest.sin_family = AF_INET;
	dest.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	dest.sin_port = htons(static_cast<uint16_t>(tcp_test::closed_port(AF_INET)));
	ASSERT_EQ(0, fi_connect(pair.client, &dest, nullptr, 0));
	EqEvent err = pair.wait_eq(pair.client_eq);
	ASSERT_EQ(-FI_EAVAIL, err.ret);
	EXPECT_EQ(FI_ECONNREFUSED, err.error.err);
	// The endpoint is unusable for data now, but sends fail cleanly.
	char c = 0;
	EXPECT_NE(0, fi_send(pair.client, &c, 1, nullptr, 0, nullptr));
}

TEST(TcpCm, ConnectToBadAddressIsInvalid)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	sockaddr_in bogus{};
	bogus.sin_family = 12345;
	EXPECT_EQ(-FI_EINVAL, fi_connect(pair.client, &bogus, nullptr, 0));
}

TEST(TcpCm, ShutdownRaisesShutdownEventAtPeer)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	ASSERT_EQ(0, fi_shutdown(pair.client, 0));
	EqEvent ev = pair.wait_eq(pair.server_eq);
	EXPECT_EQ(FI_SHUTDOWN, ev.event);
	EXPECT_EQ(&pair.server->fid, ev.fid);
	char c = 0;
	EXPECT_NE(0, fi_send(pair.client, &c, 1, nullptr, 0, nullptr));
}

// fi_cm(3) as a conformance program walks it, for every CM data size: a request rejected
// with data gives the connector FI_ECONNREFUSED carrying that data; a new endpoint connects
// again, is accepted with data; then the server shuts down and gets FI_SHUTDOWN itself (a
// program waiting for it hung), as does the client; one byte over the limit is -FI_EINVAL.
TEST(TcpCm, RejectAcceptShutdownCycleForEveryCmDataSize)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	size_t max = 0, len = sizeof(max);
	ASSERT_EQ(0, fi_getopt(&pair.client->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &max,
			       &len));
	for (size_t n = 1; n <= max; n++) {
		SCOPED_TRACE(n);
		std::string data(n, static_cast<char>('a' + n % 26));
		data[n - 1] = static_cast<char>(n);
		ASSERT_EQ(0, fi_connect(pair.client, pair.listen_addr.data(), data.data(), n));
		EqEvent req = pair.wait_eq(pair.server_eq);
		ASSERT_EQ(FI_CONNREQ, req.event);
		EXPECT_EQ(data, std::string(req.data.begin(), req.data.end()));
		ASSERT_EQ(0, fi_reject(pair.pep, req.info->handle, data.data(), n));
		fi_freeinfo(req.info);
		EqEvent refused = pair.wait_eq(pair.client_eq);
		ASSERT_EQ(-FI_EAVAIL, refused.ret);
		EXPECT_EQ(FI_ECONNREFUSED, refused.error.err);
		EXPECT_EQ(data, std::string(refused.err_data.begin(), refused.err_data.end()));

		ASSERT_TRUE(pair.open_client());
		std::string reply(data.rbegin(), data.rend());
		ASSERT_TRUE(pair.connect(data, reply));
		ASSERT_EQ(0, fi_shutdown(pair.server, 0));
		EqEvent own = pair.wait_eq(pair.server_eq);
		EXPECT_EQ(FI_SHUTDOWN, own.event);
		EXPECT_EQ(&pair.server->fid, own.fid);
		EqEvent peer = pair.wait_eq(pair.client_eq);
		EXPECT_EQ(FI_SHUTDOWN, peer.event);
		EXPECT_EQ(&pair.client->fid, peer.fid);
		ASSERT_EQ(0, fi_close(&pair.server->fid));
		pair.server = nullptr;
		ASSERT_TRUE(pair.open_client());
	}
	std::string over(max + 1, 'x');
	EXPECT_EQ(-FI_EINVAL, fi_connect(pair.client, pair.listen_addr.data(), over.data(),
					 over.size()));
}

// fi_getinfo(3) with hints->handle = a passive endpoint: the infos carry that handle, and an
// active endpoint made from them takes over the address the passive endpoint was given with
// fi_setname: fi_getname reports it after fi_enable, and its connection leaves from it.
TEST(TcpCm, ActiveEndpointTakesOverItsPassiveEndpointsAddress)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	fid_pep *named = nullptr;
	ASSERT_EQ(0, fi_passive_ep(pair.fabric, pair.info, &named, nullptr));
	sockaddr_in addr{};
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	addr.sin_port = htons(static_cast<uint16_t>(tcp_test::closed_port(AF_INET)));
	ASSERT_EQ(0, fi_setname(&named->fid, &addr, sizeof(addr)));

	fi_info *hints = fi_dupinfo(pair.hints);
	hints->handle = &named->fid;
	fi_info *info = nullptr;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info));
	hints->handle = nullptr;
	fi_freeinfo(hints);
	EXPECT_EQ(&named->fid, info->handle);
	fid_ep *ep = nullptr;
	ASSERT_EQ(0, fi_endpoint(pair.domain, info, &ep, nullptr));
	fi_freeinfo(info);
	ASSERT_EQ(0, fi_ep_bind(ep, &pair.client_eq->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(ep, &pair.client_cq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(ep));
	sockaddr_in name{};
	size_t len = sizeof(name);
	ASSERT_EQ(0, fi_getname(&ep->fid, &name, &len));
	EXPECT_EQ(addr.sin_port, name.sin_port);

	ASSERT_EQ(0, fi_connect(ep, pair.listen_addr.data(), nullptr, 0));
	EqEvent req = pair.wait_eq(pair.server_eq);
	ASSERT_EQ(FI_CONNREQ, req.event);
	auto *from = static_cast<sockaddr_in *>(req.info->dest_addr);
	ASSERT_NE(nullptr, from);
	EXPECT_EQ(addr.sin_port, from->sin_port);
	EXPECT_EQ(0, fi_reject(pair.pep, req.info->handle, nullptr, 0));
	fi_freeinfo(req.info);
	fi_close(&ep->fid);
	fi_close(&named->fid);
}

TEST(TcpCm, PeerCloseRaisesShutdownEvent)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open());
	ASSERT_TRUE(pair.connect());
	ASSERT_EQ(0, fi_close(&pair.server->fid));
	pair.server = nullptr;
	EqEvent ev = pair.wait_eq(pair.client_eq);
	EXPECT_EQ(FI_SHUTDOWN, ev.event);
}

TEST(TcpCm, Ipv6Loopback)
{
	TcpPair pair("::1");
	fi_info *probe = nullptr;
	fi_info *hints = fi_allocinfo();
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->addr_format = FI_SOCKADDR_IN6;
	int ret = fi_getinfo(FI_VERSION(1, 17), "::1", "0", FI_SOURCE, hints, &probe);
	fi_freeinfo(hints);
	fi_freeinfo(probe);
	if (ret)
		GTEST_SKIP() << "no IPv6 loopback here";
	ASSERT_TRUE(pair.open());
	EXPECT_EQ(static_cast<uint32_t>(FI_SOCKADDR_IN6), pair.info->addr_format);
	ASSERT_TRUE(pair.connect("v6"));
	char out[] = "over ipv6", in[16] = {};
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(0, fi_send(pair.client, out, sizeof(out), nullptr, 0, out));
	fi_cq_data_entry entry;
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_STREQ(out, in);
}
