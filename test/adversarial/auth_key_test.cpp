// Authorization keys (fi_domain(3) domain_attr->auth_key) on tcp and tcp;ofi_rxm: a connection
// presenting another key, or none, is refused before any data moves (the listener reports no
// FI_CONNREQ, the connector gets FI_ECONNREFUSED), while peers holding the key talk as usual.
#include "test/adversarial/raw_peer.h"
#include "test/badinput/fabric_harness.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

#include <gtest/gtest.h>

#include <netinet/in.h>

#include <chrono>
#include <cstring>
#include <string>
#include <thread>

namespace {

using Clock = std::chrono::steady_clock;

fi_info *keyed_info(const char *prov, fi_ep_type type, const std::string &key)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = type;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->fabric_attr->prov_name = strdup(prov);
	if (!key.empty()) {
		hints->domain_attr->auth_key = static_cast<uint8_t *>(malloc(key.size()));
		memcpy(hints->domain_attr->auth_key, key.data(), key.size());
		hints->domain_attr->auth_key_size = key.size();
	}
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	EXPECT_EQ(0, ret) << prov << ": " << fi_strerror(-ret);
	if (info) {
		EXPECT_EQ(key.size(), info->domain_attr->auth_key_size);
	}
	return info;
}

// A tcp listener with a key and connectors with the right key, another key and none.
class AuthKeyMsg : public ::testing::Test {
protected:
	void SetUp() override
	{
		server_info = keyed_info("tcp", FI_EP_MSG, "right key");
		ASSERT_NE(nullptr, server_info);
		server = std::make_unique<harness::Side>(server_info);
		ASSERT_TRUE(server->ok);
		ASSERT_EQ(0, fi_passive_ep(server->fabric, server_info, &pep, nullptr));
		ASSERT_EQ(0, fi_pep_bind(pep, &server->eq->fid, 0));
		ASSERT_EQ(0, fi_listen(pep));
		size_t len = sizeof(addr);
		ASSERT_EQ(0, fi_getname(&pep->fid, &addr, &len));
	}
	void TearDown() override
	{
		if (pep)
			fi_close(&pep->fid);
		server.reset();
		fi_freeinfo(server_info);
	}

	// Connects an endpoint holding 'key'; returns the event the connector ends with
	// (FI_CONNECTED, or -FI_ECONNREFUSED...) and whether the listener saw a request.
	int connect_with(const std::string &key, bool *request_seen)
	{
		fi_info *info = keyed_info("tcp", FI_EP_MSG, key);
		harness::Side client(info);
		EXPECT_TRUE(client.ok);
		fid_ep *ep = nullptr;
		EXPECT_EQ(0, fi_endpoint(client.domain, info, &ep, nullptr));
		EXPECT_EQ(0, fi_ep_bind(ep, &client.eq->fid, 0));
		EXPECT_EQ(0, fi_ep_bind(ep, &client.cq->fid, FI_TRANSMIT | FI_RECV));
		EXPECT_EQ(0, fi_enable(ep));
		EXPECT_EQ(0, fi_connect(ep, &addr, "hello", 6));
		*request_seen = false;
		int result = 0;
		fid_ep *accepted = nullptr;
		auto deadline = Clock::now() + std::chrono::seconds(10);
		while (!result && Clock::now() < deadline) {
			uint32_t event = 0;
			alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 64];
			auto *entry = reinterpret_cast<fi_eq_cm_entry *>(buf);
			if (fi_eq_read(server->eq, &event, buf, sizeof(buf), 0) > 0 &&
			    event == FI_CONNREQ) {
				*request_seen = true;
				EXPECT_EQ(0, fi_endpoint(server->domain, entry->info, &accepted, nullptr));
				fi_freeinfo(entry->info);
				EXPECT_EQ(0, fi_ep_bind(accepted, &server->eq->fid, 0));
				EXPECT_EQ(0, fi_ep_bind(accepted, &server->cq->fid, FI_TRANSMIT | FI_RECV));
				EXPECT_EQ(0, fi_enable(accepted));
				EXPECT_EQ(0, fi_accept(accepted, nullptr, 0));
			}
			ssize_t n = fi_eq_read(client.eq, &event, buf, sizeof(buf), 0);
			if (n > 0 && event == FI_CONNECTED) {
				result = FI_CONNECTED;
			} else if (n == -FI_EAVAIL) {
				fi_eq_err_entry err{};
				fi_eq_readerr(client.eq, &err, 0);
				result = -err.err;
			}
		}
		if (accepted)
			fi_close(&accepted->fid);
		fi_close(&ep->fid);
		fi_freeinfo(info);
		return result;
	}

	fi_info *server_info = nullptr;
	std::unique_ptr<harness::Side> server;
	fid_pep *pep = nullptr;
	sockaddr_in addr{};
};

TEST_F(AuthKeyMsg, OnlyTheRightKeyConnects)
{
	bool seen = false;
	EXPECT_EQ(-FI_ECONNREFUSED, connect_with("wrong key", &seen));
	EXPECT_FALSE(seen);
	EXPECT_EQ(-FI_ECONNREFUSED, connect_with("", &seen));
	EXPECT_FALSE(seen);
	EXPECT_EQ(FI_CONNECTED, connect_with("right key", &seen));
	EXPECT_TRUE(seen);
}

TEST_F(AuthKeyMsg, RawConnectorWithoutTheKeyIsRefused)
{
	std::thread attacker([this] {
		adversary::RawPeer peer;
		ASSERT_EQ(0, peer.connect_to(reinterpret_cast<sockaddr *>(&addr), sizeof(addr)));
		tcp::CmType answer = tcp::CmType::accept;
		std::vector<uint8_t> data;
		EXPECT_EQ(0, peer.request("x", 1, 10000, &answer, &data));
		EXPECT_EQ(tcp::CmType::reject, answer);
	});
	// The listener progresses while its EQ is read; nothing may show up there.
	auto deadline = Clock::now() + std::chrono::seconds(2);
	bool seen = false;
	while (Clock::now() < deadline) {
		uint32_t event = 0;
		alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 64];
		if (fi_eq_read(server->eq, &event, buf, sizeof(buf), 0) > 0 && event == FI_CONNREQ) {
			seen = true;
			fi_freeinfo(reinterpret_cast<fi_eq_cm_entry *>(buf)->info);
		}
	}
	attacker.join();
	EXPECT_FALSE(seen);
}

TEST_F(AuthKeyMsg, OverlongKeysAreNotOffered)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_MSG;
	hints->fabric_attr->prov_name = strdup("tcp");
	hints->domain_attr->auth_key_size = 65;
	hints->domain_attr->auth_key = static_cast<uint8_t *>(calloc(1, 65));
	fi_info *info = nullptr;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE,
					   hints, &info));
	fi_freeinfo(hints);
}

// tcp;ofi_rxm: endpoints holding the key exchange messages; an endpoint with another key
// cannot reach the server (its send fails) and the server receives nothing from it.
TEST(AuthKeyRdm, AnotherKeyCannotReachTheServer)
{
	fi_info *right = keyed_info("tcp;ofi_rxm", FI_EP_RDM, "rdm key");
	fi_info *wrong = keyed_info("tcp;ofi_rxm", FI_EP_RDM, "not it");
	ASSERT_NE(nullptr, right);
	ASSERT_NE(nullptr, wrong);
	harness::Side server(right), friend_(right), stranger(wrong);
	ASSERT_TRUE(server.ok && friend_.ok && stranger.ok);
	char name[64];
	size_t len = sizeof(name);
	ASSERT_EQ(0, fi_getname(&server.ep->fid, name, &len));
	fi_addr_t at_friend = FI_ADDR_NOTAVAIL, at_stranger = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(1, fi_av_insert(friend_.av, name, 1, &at_friend, 0, nullptr));
	ASSERT_EQ(1, fi_av_insert(stranger.av, name, 1, &at_stranger, 0, nullptr));

	char in[16] = {};
	ASSERT_EQ(0, fi_recv(server.ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, in));
	int bad_ctx = 0, good_ctx = 0;
	ASSERT_EQ(0, fi_send(stranger.ep, "intruder", 9, nullptr, at_stranger, &bad_ctx));
	bool found = false;
	harness::Completion c = harness::wait_for(stranger, server, &bad_ctx, found, 30);
	ASSERT_TRUE(found);
	EXPECT_TRUE(c.error);
	EXPECT_STRNE("intruder", in);

	ASSERT_EQ(0, fi_send(friend_.ep, "friend", 7, nullptr, at_friend, &good_ctx));
	c = harness::wait_for(server, friend_, in, found, 20);
	ASSERT_TRUE(found);
	EXPECT_FALSE(c.error);
	EXPECT_STREQ("friend", in);
	fi_freeinfo(right);
	fi_freeinfo(wrong);
}

} // namespace
