// How fi_tostr prints fi_info source and destination addresses.
#include "src/test/tostr_test_util.h"

#include <rdma/fabric.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

// The text after "src_addr: " up to the end of that line.
std::string address_text(uint32_t format, const void *addr)
{
	fi_info info{};
	info.addr_format = format;
	info.src_addr = const_cast<void *>(addr);
	std::string text = tostr(&info, FI_TYPE_INFO);
	size_t start = text.find("src_addr: ") + strlen("src_addr: ");
	return text.substr(start, text.find('\n', start) - start);
}

sockaddr_in ipv4(const char *ip, uint16_t port)
{
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	inet_pton(AF_INET, ip, &sin.sin_addr);
	return sin;
}

sockaddr_in6 ipv6(const char *ip, uint16_t port)
{
	sockaddr_in6 sin6{};
	sin6.sin6_family = AF_INET6;
	sin6.sin6_port = htons(port);
	inet_pton(AF_INET6, ip, &sin6.sin6_addr);
	return sin6;
}

TEST(TostrAddr, NullAddress)
{
	EXPECT_EQ(address_text(FI_SOCKADDR_IN, nullptr), "(null)");
}

TEST(TostrAddr, SocketAddresses)
{
	sockaddr_in sin = ipv4("10.1.2.3", 1234);
	sockaddr_in6 sin6 = ipv6("fe80::1", 99);
	EXPECT_EQ(address_text(FI_SOCKADDR_IN, &sin), "fi_sockaddr_in://10.1.2.3:1234");
	EXPECT_EQ(address_text(FI_SOCKADDR, &sin), "fi_sockaddr_in://10.1.2.3:1234");
	EXPECT_EQ(address_text(FI_SOCKADDR_IN6, &sin6), "fi_sockaddr_in6://[fe80::1]:99");
	EXPECT_EQ(address_text(FI_SOCKADDR, &sin6), "fi_sockaddr_in6://[fe80::1]:99");
}

// The format picks where the address bytes are; the stored family decides how they read.
TEST(TostrAddr, FormatAndFamilyDisagreeing)
{
	sockaddr_in6 sin6 = ipv6("fe80::1", 99);
	sockaddr_in sin = ipv4("10.1.2.3", 1234);
	EXPECT_EQ(address_text(FI_SOCKADDR_IN, &sin6), "fi_sockaddr_in://0:0:fe80:::99");
	EXPECT_EQ(address_text(FI_SOCKADDR_IN6, &sin), "fi_sockaddr_in6://[0.0.0.0]:1234");
}

TEST(TostrAddr, NonIpFamilyPrintsNothing)
{
	sockaddr_in sin = ipv4("10.1.2.3", 1234);
	sin.sin_family = 77;
	EXPECT_EQ(address_text(FI_SOCKADDR_IN, &sin), "");
	EXPECT_EQ(address_text(FI_SOCKADDR, &sin), "");
}

TEST(TostrAddr, InfinibandSocketAddress)
{
	unsigned char sib[48];
	for (size_t i = 0; i < sizeof sib; i++)
		sib[i] = static_cast<unsigned char>(i + 1);
	EXPECT_EQ(address_text(FI_SOCKADDR_IB, sib),
		  "fi_sockaddr_ib://[90a:b0c:d0e:f10:1112:1314:1516:1718]:0x304:0xd1e:0x30");
}

TEST(TostrAddr, ProviderNames)
{
	uint64_t words[4] = { 0x1122334455667788ull, 0x99aabbccddeeff00ull, 3, 4 };
	EXPECT_EQ(address_text(FI_ADDR_PSMX, words), "fi_addr_psmx://1122334455667788");
	EXPECT_EQ(address_text(FI_ADDR_PSMX2, words),
		  "fi_addr_psmx2://1122334455667788:99aabbccddeeff00");
	EXPECT_EQ(address_text(FI_ADDR_PSMX3, words),
		  "fi_addr_psmx3://1122334455667788:99aabbccddeeff00:3:4");
	EXPECT_EQ(address_text(FI_ADDR_GNI, words), "fi_addr_gni://1122334455667788");

	uint64_t one = 1;
	EXPECT_EQ(address_text(FI_ADDR_OPX, &one), "fi_addr_opx://0000000000000001");
	uint32_t cxi = 1;
	EXPECT_EQ(address_text(FI_ADDR_CXI, &cxi), "fi_addr_cxi://0x00000001");

	char expected[64];
	snprintf(expected, sizeof expected, "fi_addr_mlx://%p", static_cast<void *>(words));
	EXPECT_EQ(address_text(FI_ADDR_MLX, words), expected);
	snprintf(expected, sizeof expected, "fi_addr_bgq://%p", static_cast<void *>(words));
	EXPECT_EQ(address_text(FI_ADDR_BGQ, words), expected);
}

TEST(TostrAddr, GidBasedNames)
{
	unsigned char name[32];
	for (size_t i = 0; i < sizeof name; i++)
		name[i] = static_cast<unsigned char>(i + 1);
	EXPECT_EQ(address_text(FI_ADDR_IB_UD, name),
		  "fi_addr_ib_ud://102:304:506:708:90a:b0c:d0e:f10:14131211/1615/1817/1b");
	EXPECT_EQ(address_text(FI_ADDR_EFA, name),
		  "fi_addr_efa://[102:304:506:708:90a:b0c:d0e:f10]:4625:404166165");

	unsigned char zero[32] = {};
	EXPECT_EQ(address_text(FI_ADDR_IB_UD, zero), "fi_addr_ib_ud://:::0/0/0/0");
}

TEST(TostrAddr, StringAndOpaqueFormats)
{
	EXPECT_EQ(address_text(FI_ADDR_STR, "fi_sockaddr_in://1.2.3.4:5"),
		  "fi_sockaddr_in://1.2.3.4:5");
	uint64_t words[2] = { 1, 2 };
	EXPECT_EQ(address_text(FI_FORMAT_UNSPEC, words), "");
	EXPECT_EQ(address_text(FI_PROV_SPECIFIC | 1, words), "");
	EXPECT_EQ(address_text(40, words), "");
}

// An address may fill the buffer one byte further than other text, and the buffer's last
// byte is always cleared once an address was written.
TEST(TostrAddr, AddressTruncationAndTerminator)
{
	sockaddr_in sin = ipv4("10.1.2.3", 1234);
	fi_info info{};
	info.addr_format = FI_SOCKADDR_IN;
	info.src_addr = &sin;

	std::string full = tostr(&info, FI_TYPE_INFO);
	size_t address_end = full.find("\n    dest_addr: ");
	std::vector<char> buf(address_end + 1, 'Z');
	fi_tostr_r(buf.data(), buf.size(), &info, FI_TYPE_INFO);
	EXPECT_EQ(std::string(buf.data()), full.substr(0, address_end));

	std::vector<char> roomy(full.size() + 100, 'Z');
	fi_tostr_r(roomy.data(), roomy.size(), &info, FI_TYPE_INFO);
	EXPECT_EQ(roomy.back(), '\0');
	EXPECT_EQ(std::string(roomy.data()), full);
}

} // namespace
