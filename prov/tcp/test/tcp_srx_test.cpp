// Shared receive contexts (fi_srx_context): receives posted once to the context serve the
// endpoints bound to it, completions land on the receiving endpoint's CQ, a message that
// finds no receive waits in the socket until one is posted.
#include "prov/tcp/test/tcp_test_pair.h"

#include <gtest/gtest.h>

#include <cstring>

using tcp_test::TcpPair;

namespace {

class TcpSrx : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(pair.open());
		fi_rx_attr attr{};
		attr.size = 8;
		ASSERT_EQ(0, fi_srx_context(pair.domain, &attr, &srx, nullptr));
		pair.before_server_enable = [this](fid_ep *ep) {
			EXPECT_EQ(-FI_EBADFLAGS, fi_ep_bind(ep, &srx->fid, FI_RECV));
			EXPECT_EQ(0, fi_ep_bind(ep, &srx->fid, 0));
			EXPECT_EQ(-FI_EOPBADSTATE, fi_ep_bind(ep, &srx->fid, 0));
		};
		ASSERT_TRUE(pair.connect());
	}
	void TearDown() override
	{
		EXPECT_EQ(-FI_EBUSY, fi_close(&srx->fid));
		fi_close(&pair.server->fid);
		pair.server = nullptr;
		EXPECT_EQ(0, fi_close(&srx->fid));
	}
	TcpPair pair;
	fid_ep *srx = nullptr;
	fi_cq_data_entry entry{};
};

} // namespace

TEST_F(TcpSrx, ReceivesComeFromTheSharedContext)
{
	char in[3][16] = {};
	for (auto &b : in)
		ASSERT_EQ(0, fi_recv(srx, b, sizeof(b), nullptr, 0, b));
	EXPECT_EQ(5, srx->ops->rx_size_left(srx)); // fi_rx_size_left is deprecated
	// The endpoint's own queue is not used while it shares one.
	char own[8];
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_recv(pair.server, own, sizeof(own), nullptr, 0, own));
	const char *msgs[3] = {"first", "second", "third"};
	for (const char *m : msgs)
		ASSERT_EQ(0, fi_send(pair.client, m, strlen(m) + 1, nullptr, 0, nullptr));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
		EXPECT_EQ(in[i], entry.op_context);
		EXPECT_EQ(FI_RECV | FI_MSG, entry.flags);
		EXPECT_EQ(strlen(msgs[i]) + 1, entry.len);
		EXPECT_STREQ(msgs[i], in[i]);
		ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	}
}

TEST_F(TcpSrx, MessagesWaitForAPostedReceive)
{
	char big[2000], in[2000] = {};
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = static_cast<char>(i * 7);
	ASSERT_EQ(0, fi_send(pair.client, big, sizeof(big), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_send(pair.client, "tail", 5, nullptr, 0, nullptr));
	EXPECT_TRUE(pair.cq_stays_empty(pair.server_cq, 50));
	ASSERT_EQ(0, fi_recv(srx, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(in, entry.op_context);
	EXPECT_EQ(0, memcmp(big, in, sizeof(big)));
	EXPECT_TRUE(pair.cq_stays_empty(pair.server_cq, 50));
	char tail[8] = {};
	ASSERT_EQ(0, fi_recv(srx, tail, sizeof(tail), nullptr, 0, tail));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_STREQ("tail", tail);
}

TEST_F(TcpSrx, RefusesWhatItCannotDo)
{
	char buf[64];
	iovec iov{buf, sizeof(buf)};
	fi_msg msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	EXPECT_EQ(-FI_EINVAL, fi_recvmsg(srx, &msg, FI_MULTI_RECV));
	EXPECT_EQ(-FI_ENOSYS, fi_send(srx, buf, 1, nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_recv(srx, buf, sizeof(buf), nullptr, 0, buf));
	EXPECT_EQ(0, fi_cancel(&srx->fid, buf));
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&srx->fid, buf));
	fi_rx_attr tagged{};
	tagged.caps = FI_TAGGED;
	fid_ep *other = nullptr;
	EXPECT_EQ(-FI_EOPNOTSUPP, fi_srx_context(pair.domain, &tagged, &other, nullptr));
}

// As fabtests and the system library's users do: both sides open their shared context with
// their info's rx_attr (which names RMA capabilities too) and bind it to an active endpoint,
// the connecting client's as well as the accepted server's. Shared transmit contexts do not
// exist in tcp, so fi_getinfo finds nothing for them (rather than fi_stx_context failing).
TEST(TcpSrxBothSides, ClientAndServerReceiveThroughSharedContexts)
{
	TcpPair pair;
	fid_ep *client_srx = nullptr, *server_srx = nullptr;
	pair.before_client_enable = [&](fid_ep *ep) {
		ASSERT_EQ(0, fi_srx_context(pair.domain, pair.info->rx_attr, &client_srx, nullptr));
		EXPECT_EQ(0, fi_ep_bind(ep, &client_srx->fid, 0));
	};
	pair.before_server_enable = [&](fid_ep *ep) {
		ASSERT_EQ(0, fi_srx_context(pair.domain, pair.info->rx_attr, &server_srx, nullptr));
		EXPECT_EQ(0, fi_ep_bind(ep, &server_srx->fid, 0));
	};
	ASSERT_TRUE(pair.open());
	ASSERT_NE(nullptr, client_srx);
	char at_client[16] = {}, at_server[16] = {};
	ASSERT_EQ(0, fi_recv(client_srx, at_client, sizeof(at_client), nullptr, 0, at_client));
	ASSERT_TRUE(pair.connect());
	ASSERT_NE(nullptr, server_srx);
	ASSERT_EQ(0, fi_recv(server_srx, at_server, sizeof(at_server), nullptr, 0, at_server));
	fi_cq_data_entry entry{};
	ASSERT_EQ(0, fi_send(pair.client, "ping", 5, nullptr, 0, nullptr));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(at_server, entry.op_context);
	EXPECT_STREQ("ping", at_server);
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry)); // the send
	ASSERT_EQ(0, fi_send(pair.server, "pong", 5, nullptr, 0, nullptr));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(at_client, entry.op_context);
	EXPECT_STREQ("pong", at_client);
	fi_close(&pair.client->fid);
	pair.client = nullptr;
	fi_close(&pair.server->fid);
	pair.server = nullptr;
	EXPECT_EQ(0, fi_close(&client_srx->fid));
	EXPECT_EQ(0, fi_close(&server_srx->fid));
}

TEST(TcpSrxBothSides, GetinfoOffersSharedReceiveButNoSharedTransmitContexts)
{
	for (bool tx : {true, false}) {
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_MSG;
		hints->fabric_attr->prov_name = strdup("tcp");
		(tx ? hints->ep_attr->tx_ctx_cnt : hints->ep_attr->rx_ctx_cnt) = FI_SHARED_CONTEXT;
		fi_info *info = nullptr;
		int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
		EXPECT_EQ(tx ? -FI_ENODATA : 0, ret) << (tx ? "tx" : "rx");
		fi_freeinfo(info);
		fi_freeinfo(hints);
	}
}
