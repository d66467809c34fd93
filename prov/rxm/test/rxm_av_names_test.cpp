// Peer names as rxm keys and prints them: canonical lookup keys and log text.
#include "prov/rxm/rxm_av.h"
#include "prov/rxm/test/rxm_test_provider.h"

#include <netinet/in.h>

#include <gtest/gtest.h>

#include <cstring>

using rxm::canonical_address;
using rxm::describe_address;
using rxm_test::ipv4;

TEST(RxmAvNames, PaddingDoesNotChangeTheKey)
{
	sockaddr_in clean = ipv4("127.0.0.1", 4000), padded = clean;
	memset(padded.sin_zero, 0xab, sizeof(padded.sin_zero));
	EXPECT_EQ(canonical_address(&clean, sizeof(clean)),
		  canonical_address(&padded, sizeof(padded)));
}

TEST(RxmAvNames, SocketAddressesPrintLikeEveryProvidersLogs)
{
	sockaddr_in in = ipv4("127.0.0.1", 4000);
	EXPECT_EQ("fi_sockaddr_in://127.0.0.1:4000",
		  describe_address(canonical_address(&in, sizeof(in))));
	sockaddr_in6 in6{};
	in6.sin6_family = AF_INET6;
	in6.sin6_port = htons(5000);
	in6.sin6_addr = in6addr_loopback;
	EXPECT_EQ("fi_sockaddr_in6://[::1]:5000",
		  describe_address(canonical_address(&in6, sizeof(in6))));
}

TEST(RxmAvNames, OtherAddressesPrintAsHex)
{
	EXPECT_EQ("01ff7a", describe_address(std::string("\x01\xff\x7a", 3)));
	// A sockaddr_in cut short is not printed as one.
	sockaddr_in in = ipv4("10.0.0.1", 1);
	std::string cut(reinterpret_cast<const char *>(&in), 4);
	EXPECT_EQ(8u, describe_address(cut).size());
	EXPECT_EQ("", describe_address(""));
}
