// fi_getinfo for shm: what is reported, how node/service become fi_shm:// addresses, and
// what is refused (other hosts, socket address formats, authorization keys).
#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>

// The registry names providers through weak references, which do not pull a provider's
// objects out of the static library this binary links: name rxm's entry point so the
// layering test below has rxm to layer.
extern "C" struct fi_provider *ofi_rxm_provider_init(void);

namespace {

struct fi_provider *(*volatile link_rxm)(void) = &ofi_rxm_provider_init;

fi_info *shm_hints(fi_ep_type type = FI_EP_MSG)
{
	fi_info *h = fi_allocinfo();
	h->ep_attr->type = type;
	h->caps = FI_MSG;
	h->fabric_attr->prov_name = strdup("shm");
	return h;
}

std::string text(const void *addr) { return addr ? static_cast<const char *>(addr) : ""; }

TEST(ShmInfo, ReportsMsgEndpointsOfThisHostOnly)
{
	fi_info *h = shm_hints(), *info = nullptr;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &info));
	ASSERT_NE(nullptr, info);
	EXPECT_STREQ("shm", info->fabric_attr->prov_name);
	EXPECT_EQ(FI_EP_MSG, info->ep_attr->type);
	EXPECT_EQ(static_cast<uint32_t>(FI_PROTO_SHM), info->ep_attr->protocol);
	EXPECT_EQ(static_cast<uint32_t>(FI_ADDR_STR), info->addr_format);
	EXPECT_TRUE(info->caps & FI_LOCAL_COMM);
	EXPECT_FALSE(info->caps & FI_REMOTE_COMM);
	EXPECT_EQ(32u, info->src_addrlen);
	EXPECT_EQ("fi_shm://0", text(info->src_addr));
	fi_freeinfo(info);
	fi_freeinfo(h);
}

TEST(ShmInfo, ServiceNamesTheListener)
{
	fi_info *h = shm_hints(), *info = nullptr;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "9228", FI_SOURCE, h, &info));
	EXPECT_EQ("fi_shm://9228", text(info->src_addr));
	EXPECT_EQ(nullptr, info->dest_addr);
	fi_freeinfo(info);
	info = nullptr;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), "localhost", "9228", 0, h, &info));
	EXPECT_EQ("fi_shm://9228", text(info->dest_addr));
	fi_freeinfo(info);
	info = nullptr;
	// An fi_shm:// address given as node is taken as it is.
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), "fi_shm://12:3", nullptr, 0, h, &info));
	EXPECT_EQ("fi_shm://12:3", text(info->dest_addr));
	fi_freeinfo(info);
	fi_freeinfo(h);
}

TEST(ShmInfo, RefusesOtherHostsFormatsAndKeys)
{
	fi_info *h = shm_hints(), *info = nullptr;
	// TEST-NET-1: never an address of this host.
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), "192.0.2.1", "9228", 0, h, &info));
	h->addr_format = FI_SOCKADDR_IN;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &info));
	h->addr_format = FI_FORMAT_UNSPEC;
	h->domain_attr->auth_key = static_cast<uint8_t *>(malloc(4));
	memcpy(h->domain_attr->auth_key, "key", 4);
	h->domain_attr->auth_key_size = 4;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &info));
	fi_freeinfo(h);
	// A malformed address in the hints.
	h = shm_hints();
	h->dest_addr = strdup("fi_shm://a/b");
	h->dest_addrlen = strlen("fi_shm://a/b") + 1;
	h->addr_format = FI_ADDR_STR;
	EXPECT_EQ(-FI_ENODATA, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &info));
	fi_freeinfo(h);
}

TEST(ShmInfo, RxmLayersOnShm)
{
	ASSERT_NE(nullptr, link_rxm);
	fi_info *h = shm_hints(FI_EP_RDM), *info = nullptr;
	ASSERT_EQ(0, fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, h, &info));
	ASSERT_NE(nullptr, info);
	EXPECT_STREQ("shm;ofi_rxm", info->fabric_attr->prov_name);
	EXPECT_EQ(FI_EP_RDM, info->ep_attr->type);
	fi_freeinfo(info);
	fi_freeinfo(h);
}

} // namespace
