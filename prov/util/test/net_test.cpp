// Socket address helpers, interface enumeration and getinfo address filling.
#include "prov/util/info_util.h"
#include "prov/util/interfaces.h"
#include "prov/util/sockaddr_util.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <cstring>

namespace {

TEST(Sockaddr, LengthValidityAndPrinting)
{
	struct sockaddr_storage addr;
	size_t len = 0;
	ASSERT_EQ(util::resolve_sockaddr("127.0.0.1", "23100", false, FI_SOCKADDR_IN, &addr, &len),
		  0);
	EXPECT_EQ(len, sizeof(struct sockaddr_in));
	EXPECT_EQ(util::sockaddr_length(&addr), len);
	EXPECT_EQ(util::sockaddr_port(&addr), 23100);
	EXPECT_TRUE(util::sockaddr_is_loopback(&addr));
	EXPECT_TRUE(util::sockaddr_valid(&addr, len, FI_SOCKADDR));
	EXPECT_FALSE(util::sockaddr_valid(&addr, len, FI_SOCKADDR_IN6));
	EXPECT_FALSE(util::sockaddr_valid(&addr, len - 1, FI_SOCKADDR_IN));
	EXPECT_EQ(util::sockaddr_to_string(&addr), "fi_sockaddr_in://127.0.0.1:23100");
	util::sockaddr_set_port(&addr, 23101);
	EXPECT_EQ(util::sockaddr_port(&addr), 23101);

	struct sockaddr_storage six;
	ASSERT_EQ(util::resolve_sockaddr("::1", "23102", false, FI_SOCKADDR_IN6, &six, &len), 0);
	EXPECT_EQ(len, sizeof(struct sockaddr_in6));
	EXPECT_EQ(util::sockaddr_to_string(&six), "fi_sockaddr_in6://[::1]:23102");
	EXPECT_FALSE(util::sockaddr_equal(&addr, &six));
	EXPECT_TRUE(util::sockaddr_equal(&six, &six));

	ASSERT_EQ(util::resolve_sockaddr(nullptr, "23103", true, FI_SOCKADDR_IN, &addr, &len), 0);
	EXPECT_TRUE(util::sockaddr_is_any(&addr));
	EXPECT_EQ(util::resolve_sockaddr("no.such.host.invalid", "1", false, FI_SOCKADDR, &addr,
					 &len),
		  -FI_ENODATA);
	EXPECT_EQ(util::resolve_sockaddr("127.0.0.1", "1", false, FI_ADDR_STR, &addr, &len),
		  -FI_EINVAL);
}

TEST(Interfaces, LoopbackIsListedWithItsSubnet)
{
	auto list = util::list_interfaces(AF_INET);
	bool found = false;
	for (const auto &item : list) {
		if (item.name == "lo") {
			found = true;
			EXPECT_EQ(item.subnet, "127.0.0.0/8");
			EXPECT_EQ(item.prefix_length, 8);
			EXPECT_TRUE(item.loopback);
			EXPECT_TRUE(item.up);
		}
	}
	EXPECT_TRUE(found);
	struct sockaddr_in lo{};
	lo.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &lo.sin_addr);
	const util::NetInterface *owner = util::find_interface(list, &lo);
	ASSERT_NE(owner, nullptr);
	EXPECT_EQ(owner->name, "lo");
}

TEST(InfoUtil, FillAddressesFollowsFiSource)
{
	struct fi_info *info = fi_allocinfo();
	ASSERT_NE(info, nullptr);
	ASSERT_EQ(util::fill_addresses(info, "127.0.0.1", "23110", 0, nullptr, FI_SOCKADDR_IN), 0);
	ASSERT_NE(info->dest_addr, nullptr);
	EXPECT_EQ(info->dest_addrlen, sizeof(struct sockaddr_in));
	EXPECT_EQ(info->src_addr, nullptr);
	EXPECT_EQ(util::sockaddr_port(info->dest_addr), 23110);

	struct fi_info *source = fi_allocinfo();
	ASSERT_EQ(util::fill_addresses(source, "127.0.0.1", "23111", FI_SOURCE, nullptr,
				       FI_SOCKADDR_IN),
		  0);
	ASSERT_NE(source->src_addr, nullptr);
	EXPECT_EQ(source->dest_addr, nullptr);
	EXPECT_EQ(util::sockaddr_port(source->src_addr), 23111);
	EXPECT_EQ(util::fill_addresses(source, "no.such.host.invalid", "1", 0, nullptr,
				       FI_SOCKADDR),
		  -FI_ENODATA);

	EXPECT_EQ(util::set_string(&info->fabric_attr->name, "127.0.0.0/8"), 0);
	EXPECT_STREQ(info->fabric_attr->name, "127.0.0.0/8");
	util::append_info(&info, source);
	struct fi_info *copy = util::dup_info_list(info);
	ASSERT_NE(copy, nullptr);
	ASSERT_NE(copy->next, nullptr);
	EXPECT_EQ(copy->next->next, nullptr);
	EXPECT_EQ(util::api_version_of(copy), static_cast<uint32_t>(FI_VERSION(1, 17)));
	fi_freeinfo(copy);
	fi_freeinfo(info);
}

} // namespace
