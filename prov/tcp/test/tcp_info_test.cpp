// fi_getinfo of the tcp provider called directly: address resolution, interface selection,
// hint handling and FI_TCP_IFACE.
#include "prov/tcp/tcp_info.h"
#include "prov/tcp/tcp_interfaces.h"
#include "prov/tcp/tcp_provider.h"

#include <rdma/fi_errno.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

using namespace tcp;

namespace {

struct InfoList {
	fi_info *head = nullptr;
	~InfoList() { fi_freeinfo(head); }
	int count() const
	{
		int n = 0;
		for (fi_info *i = head; i; i = i->next)
			n++;
		return n;
	}
};

sockaddr_in loopback4(uint16_t port)
{
	sockaddr_in in{};
	in.sin_family = AF_INET;
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	in.sin_port = htons(port);
	return in;
}

class TcpInfo : public ::testing::Test {
protected:
	void SetUp() override
	{
		unsetenv("FI_TCP_IFACE");
		load_settings();
		hints = fi_allocinfo();
	}
	void TearDown() override
	{
		fi_freeinfo(hints);
		unsetenv("FI_TCP_IFACE");
		load_settings();
	}
	fi_info *hints = nullptr;
};

} // namespace

TEST_F(TcpInfo, EveryInfoDescribesAnUsableMsgEndpoint)
{
	InfoList list;
	ASSERT_EQ(0, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, &list.head));
	ASSERT_GT(list.count(), 0);
	bool saw_lo = false;
	for (fi_info *i = list.head; i; i = i->next) {
		EXPECT_EQ(FI_EP_MSG, i->ep_attr->type);
		EXPECT_EQ(static_cast<uint32_t>(FI_PROTO_SOCK_TCP), i->ep_attr->protocol);
		EXPECT_STREQ("tcp", i->fabric_attr->prov_name);
		EXPECT_GE(i->tx_attr->iov_limit, 4u);
		EXPECT_TRUE(i->tx_attr->msg_order & FI_ORDER_SAS);
		EXPECT_TRUE(i->addr_format == FI_SOCKADDR_IN || i->addr_format == FI_SOCKADDR_IN6);
		ASSERT_NE(nullptr, i->src_addr);
		EXPECT_EQ(nullptr, i->dest_addr);
		if (!strcmp(i->domain_attr->name, "lo") && i->addr_format == FI_SOCKADDR_IN) {
			saw_lo = true;
			EXPECT_STREQ("127.0.0.0/8", i->fabric_attr->name);
		}
	}
	EXPECT_TRUE(saw_lo);
}

TEST_F(TcpInfo, SourceNodeSelectsItsInterface)
{
	InfoList list;
	ASSERT_EQ(0, get_infos(FI_VERSION(1, 17), "127.0.0.1", "20555", FI_SOURCE, nullptr,
			       &list.head));
	ASSERT_EQ(1, list.count());
	EXPECT_STREQ("lo", list.head->domain_attr->name);
	auto *src = static_cast<sockaddr_in *>(list.head->src_addr);
	EXPECT_EQ(20555, ntohs(src->sin_port));
	EXPECT_EQ(nullptr, list.head->dest_addr);
}

TEST_F(TcpInfo, DestinationNodePutsItsRouteFirst)
{
	InfoList list;
	ASSERT_EQ(0, get_infos(FI_VERSION(1, 17), "127.0.0.1", "20556", 0, nullptr, &list.head));
	ASSERT_GE(list.count(), 1);
	EXPECT_STREQ("lo", list.head->domain_attr->name);
	auto *dest = static_cast<sockaddr_in *>(list.head->dest_addr);
	ASSERT_NE(nullptr, dest);
	EXPECT_EQ(20556, ntohs(dest->sin_port));
	EXPECT_EQ(sizeof(sockaddr_in), list.head->dest_addrlen);
}

TEST_F(TcpInfo, HintAddressesAreHonoured)
{
	sockaddr_in src = loopback4(20557);
	hints->src_addr = malloc(sizeof(src));
	memcpy(hints->src_addr, &src, sizeof(src));
	hints->src_addrlen = sizeof(src);
	InfoList list;
	ASSERT_EQ(0, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &list.head));
	ASSERT_EQ(1, list.count());
	EXPECT_EQ(0, memcmp(list.head->src_addr, &src, sizeof(src)));

	// A truncated address is refused.
	hints->src_addrlen = 4;
	InfoList none;
	EXPECT_EQ(-FI_ENODATA, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, hints,
					 &none.head));
}

TEST_F(TcpInfo, AddressFormatAndEndpointTypeNarrow)
{
	hints->addr_format = FI_SOCKADDR_IN6;
	InfoList v6;
	if (get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &v6.head) == 0) {
		for (fi_info *i = v6.head; i; i = i->next)
			EXPECT_EQ(static_cast<uint32_t>(FI_SOCKADDR_IN6), i->addr_format);
	}
	hints->addr_format = FI_ADDR_STR;
	InfoList none;
	EXPECT_EQ(-FI_ENODATA, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, hints,
					 &none.head));
	hints->addr_format = FI_FORMAT_UNSPEC;
	hints->ep_attr->type = FI_EP_RDM;
	EXPECT_EQ(-FI_ENODATA, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, hints,
					 &none.head));
}

TEST_F(TcpInfo, UnresolvableNodeIsNoData)
{
	InfoList none;
	EXPECT_EQ(-FI_ENODATA, get_infos(FI_VERSION(1, 17), "no.such.host.invalid", "1", 0,
					 nullptr, &none.head));
}

TEST_F(TcpInfo, IfaceParameterRestrictsInterfaces)
{
	setenv("FI_TCP_IFACE", "lo", 1);
	load_settings();
	InfoList list;
	ASSERT_EQ(0, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr, &list.head));
	for (fi_info *i = list.head; i; i = i->next)
		EXPECT_STREQ("lo", i->domain_attr->name);
	setenv("FI_TCP_IFACE", "no-such-interface", 1);
	load_settings();
	InfoList none;
	EXPECT_EQ(-FI_ENODATA, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, nullptr,
					 &none.head));
}

TEST_F(TcpInfo, ProgressAndMrModeFollowHints)
{
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	InfoList list;
	ASSERT_EQ(0, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &list.head));
	EXPECT_EQ(FI_PROGRESS_AUTO, list.head->domain_attr->data_progress);
	EXPECT_EQ(FI_MR_PROV_KEY, list.head->domain_attr->mr_mode);
	hints->domain_attr->mr_mode = FI_MR_LOCAL;
	InfoList user_keys;
	ASSERT_EQ(0, get_infos(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &user_keys.head));
	EXPECT_EQ(0, user_keys.head->domain_attr->mr_mode);
}
