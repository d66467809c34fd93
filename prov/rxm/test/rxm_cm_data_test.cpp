// Connection data and the connection-map rules.
#include "prov/rxm/rxm_cm_data.h"
#include "prov/rxm/rxm_conn_rules.h"

#include <rdma/fi_errno.h>

#include <arpa/inet.h>

#include <gtest/gtest.h>

#include <vector>

using namespace rxm;

namespace {

EndpointIdentity identity(const char *name, uint64_t id)
{
	EndpointIdentity e;
	e.name_len = static_cast<uint8_t>(strlen(name));
	memcpy(e.name, name, e.name_len);
	e.endpoint_id = id;
	return e;
}

} // namespace

TEST(RxmCmData, RoundTripFitsRdmaCmLimit)
{
	CmData cm;
	cm.credits = 128;
	cm.eager_size = 16384;
	cm.conn_id = 0x00500007;
	cm.identity.name_len = kCmMaxNameLen;
	memset(cm.identity.name, 0xab, kCmMaxNameLen);
	cm.identity.endpoint_id = 0x1234567890abcdefULL;
	uint8_t buf[kCmMaxSize];
	size_t len = encode_cm_data(cm, buf);
	EXPECT_LE(len, 56u); // rdma_cm's smallest private data limit
	CmData d;
	ASSERT_EQ(0, decode_cm_data(std::span(buf, len), &d));
	EXPECT_EQ(128, d.credits);
	EXPECT_EQ(16384u, d.eager_size);
	EXPECT_EQ(0x00500007u, d.conn_id);
	EXPECT_TRUE(d.identity == cm.identity);
}

TEST(RxmCmData, AcceptsPaddingRejectsGarbage)
{
	CmData cm;
	cm.identity = identity("abcd", 9);
	std::vector<uint8_t> buf(kCmMaxSize + 20, 0);
	size_t len = encode_cm_data(cm, buf.data());
	CmData d;
	EXPECT_EQ(0, decode_cm_data(buf, &d)); // padded
	EXPECT_EQ(9u, d.identity.endpoint_id);
	EXPECT_EQ(-FI_EIO, decode_cm_data(std::span(buf).first(len - 1), &d));
	buf[0] = 7; // version
	EXPECT_EQ(-FI_EIO, decode_cm_data(buf, &d));
	buf[0] = kCmVersion;
	buf[2] = kCmMaxNameLen + 1; // name length
	EXPECT_EQ(-FI_EIO, decode_cm_data(buf, &d));
	buf[2] = 4;
	buf[1] = 9; // reject reason
	EXPECT_EQ(-FI_EIO, decode_cm_data(buf, &d));
	EXPECT_EQ(-FI_EIO, decode_cm_data({}, &d));
}

TEST(RxmConnRules, SimultaneousConnectLeavesExactlyOneConnection)
{
	EndpointIdentity a = identity("addr-a", 1), b = identity("addr-b", 2);
	// Both have a pending request to the other when the other's request arrives.
	ConnreqAction at_a = decide_connreq(a, b, PeerConnState::connecting, 0);
	ConnreqAction at_b = decide_connreq(b, a, PeerConnState::connecting, 0);
	EXPECT_EQ(ConnreqAction::reject_simultaneous, at_a);
	EXPECT_EQ(ConnreqAction::accept_dropping_ours, at_b);
	// The loser of the race waits for the winner's connection instead of failing sends.
	EXPECT_EQ(RejectAction::wait_for_peer, decide_rejected(RejectReason::simultaneous));
}

TEST(RxmConnRules, SameAddressDifferentInstanceIsOrderedById)
{
	EndpointIdentity a1 = identity("same", 1), a2 = identity("same", 2);
	EXPECT_LT(compare_identity(a1, a2), 0);
	EXPECT_GT(compare_identity(a2, a1), 0);
	EXPECT_EQ(ConnreqAction::reject_simultaneous, decide_connreq(a1, a2, PeerConnState::connecting, 0));
}

TEST(RxmConnRules, SelfRestartDuplicateAndRefusal)
{
	EndpointIdentity a = identity("a", 1), b = identity("b", 5), b_restarted = identity("b", 6);
	EXPECT_EQ(ConnreqAction::accept_self, decide_connreq(a, a, PeerConnState::connecting, 0));
	EXPECT_EQ(ConnreqAction::accept, decide_connreq(a, b, PeerConnState::none, 0));
	// Another instance claiming b: refused while b's connection looks alive, accepted (and
	// the old connection closed) once that connection is known dead.
	EXPECT_EQ(ConnreqAction::reject_live_peer,
		  decide_connreq(a, b_restarted, PeerConnState::connected, 5));
	EXPECT_EQ(ConnreqAction::accept_replacing,
		  decide_connreq(a, b_restarted, PeerConnState::connected, 5, true));
	EXPECT_EQ(ConnreqAction::reject_duplicate, decide_connreq(a, b, PeerConnState::connected, 5));
	EXPECT_EQ(ConnreqAction::reject_duplicate,
		  decide_connreq(a, b, PeerConnState::connected, 5, true));
	EXPECT_EQ(RejectAction::fail_sends, decide_rejected(RejectReason::none));
	EXPECT_EQ(RejectAction::fail_sends, decide_rejected(RejectReason::bad_request));
}

namespace {

std::vector<uint8_t> ipv4(const char *ip, uint16_t port)
{
	sockaddr_in sa{};
	sa.sin_family = AF_INET;
	sa.sin_port = htons(port);
	inet_pton(AF_INET, ip, &sa.sin_addr);
	auto *p = reinterpret_cast<const uint8_t *>(&sa);
	return {p, p + sizeof(sa)};
}

std::vector<uint8_t> ipv6(const char *ip, uint16_t port)
{
	sockaddr_in6 sa{};
	sa.sin6_family = AF_INET6;
	sa.sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &sa.sin6_addr);
	auto *p = reinterpret_cast<const uint8_t *>(&sa);
	return {p, p + sizeof(sa)};
}

} // namespace

TEST(RxmConnRules, ClaimedNameMustShowTheConnectionsIp)
{
	// Ports never matter: requests leave from ephemeral ports.
	EXPECT_EQ(ClaimCheck::agrees, check_claimed_source(ipv4("127.0.0.1", 5000),
							   ipv4("127.0.0.1", 40000)));
	EXPECT_EQ(ClaimCheck::disagrees, check_claimed_source(ipv4("127.0.0.1", 5000),
							      ipv4("127.0.0.2", 40000)));
	EXPECT_EQ(ClaimCheck::agrees, check_claimed_source(ipv6("fe80::1", 5000),
							   ipv6("fe80::1", 40000)));
	EXPECT_EQ(ClaimCheck::disagrees, check_claimed_source(ipv6("fe80::1", 5000),
							      ipv6("fe80::2", 40000)));
	// A dual-stack listener shows IPv4 peers as IPv4-mapped IPv6.
	EXPECT_EQ(ClaimCheck::agrees, check_claimed_source(ipv4("10.1.2.3", 5000),
							   ipv6("::ffff:10.1.2.3", 40000)));
	EXPECT_EQ(ClaimCheck::disagrees, check_claimed_source(ipv4("10.1.2.3", 5000),
							      ipv6("::ffff:10.1.2.4", 40000)));
	// A claim that is no IP address at all cannot agree with an IP connection.
	std::vector<uint8_t> junk(16, 0xab);
	EXPECT_EQ(ClaimCheck::disagrees, check_claimed_source(junk, ipv4("127.0.0.1", 1)));
	EXPECT_EQ(ClaimCheck::disagrees, check_claimed_source({}, ipv4("127.0.0.1", 1)));
	std::vector<uint8_t> short_v4 = ipv4("127.0.0.1", 1);
	short_v4.resize(8);
	EXPECT_EQ(ClaimCheck::disagrees, check_claimed_source(short_v4, ipv4("127.0.0.1", 1)));
	// A transport without IP addresses shows nothing to hold the claim against.
	EXPECT_EQ(ClaimCheck::not_comparable, check_claimed_source(ipv4("127.0.0.1", 1), {}));
	EXPECT_EQ(ClaimCheck::not_comparable, check_claimed_source(ipv4("127.0.0.1", 1), junk));
}
