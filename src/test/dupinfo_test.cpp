// fi_allocinfo / fi_dupinfo / fi_freeinfo: deep copies and NULL safety.
#include <rdma/fabric.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <netinet/in.h>

namespace {

fi_info *filled_info()
{
	fi_info *info = fi_allocinfo();
	info->caps = FI_MSG | FI_TAGGED;
	info->mode = FI_CONTEXT;
	info->addr_format = FI_SOCKADDR_IN;
	auto *src = static_cast<sockaddr_in *>(calloc(1, sizeof(sockaddr_in)));
	src->sin_family = AF_INET;
	src->sin_port = htons(1234);
	info->src_addr = src;
	info->src_addrlen = sizeof(*src);
	info->dest_addr = calloc(1, sizeof(sockaddr_in));
	info->dest_addrlen = sizeof(sockaddr_in);
	info->tx_attr->inject_size = 77;
	info->tx_attr->tclass = FI_TC_BULK_DATA;
	info->rx_attr->size = 99;
	info->ep_attr->type = FI_EP_RDM;
	info->ep_attr->auth_key = static_cast<uint8_t *>(malloc(4));
	memcpy(info->ep_attr->auth_key, "key1", 4);
	info->ep_attr->auth_key_size = 4;
	info->domain_attr->name = strdup("dom");
	info->domain_attr->auth_key = static_cast<uint8_t *>(malloc(2));
	memcpy(info->domain_attr->auth_key, "k2", 2);
	info->domain_attr->auth_key_size = 2;
	info->domain_attr->mr_cnt = 5;
	info->fabric_attr->name = strdup("fab");
	info->fabric_attr->prov_name = strdup("prov");
	info->fabric_attr->api_version = FI_VERSION(1, 17);
	return info;
}

TEST(DupInfo, AllocInfoIsZeroedWithAllAttributes)
{
	fi_info *info = fi_allocinfo();
	ASSERT_NE(info, nullptr);
	EXPECT_EQ(info->next, nullptr);
	EXPECT_EQ(info->caps, 0u);
	ASSERT_NE(info->tx_attr, nullptr);
	ASSERT_NE(info->rx_attr, nullptr);
	ASSERT_NE(info->ep_attr, nullptr);
	ASSERT_NE(info->domain_attr, nullptr);
	ASSERT_NE(info->fabric_attr, nullptr);
	EXPECT_EQ(info->nic, nullptr);
	EXPECT_EQ(info->domain_attr->name, nullptr);
	EXPECT_EQ(info->fabric_attr->prov_name, nullptr);
	fi_freeinfo(info);
}

TEST(DupInfo, DeepCopyIsIndependent)
{
	fi_info *orig = filled_info();
	fi_info *copy = fi_dupinfo(orig);
	ASSERT_NE(copy, nullptr);

	EXPECT_EQ(copy->caps, orig->caps);
	EXPECT_EQ(copy->tx_attr->inject_size, 77u);
	EXPECT_EQ(copy->tx_attr->tclass, uint32_t(FI_TC_BULK_DATA));
	EXPECT_EQ(copy->domain_attr->mr_cnt, 5u);
	EXPECT_EQ(copy->fabric_attr->api_version, FI_VERSION(1, 17));
	EXPECT_NE(copy->tx_attr, orig->tx_attr);
	EXPECT_NE(copy->domain_attr->name, orig->domain_attr->name);
	EXPECT_STREQ(copy->domain_attr->name, "dom");
	EXPECT_STREQ(copy->fabric_attr->name, "fab");
	EXPECT_STREQ(copy->fabric_attr->prov_name, "prov");
	ASSERT_NE(copy->src_addr, orig->src_addr);
	ASSERT_EQ(copy->src_addrlen, sizeof(sockaddr_in));
	EXPECT_EQ(memcmp(copy->src_addr, orig->src_addr, sizeof(sockaddr_in)), 0);
	ASSERT_NE(copy->ep_attr->auth_key, orig->ep_attr->auth_key);
	EXPECT_EQ(memcmp(copy->ep_attr->auth_key, "key1", 4), 0);
	EXPECT_EQ(memcmp(copy->domain_attr->auth_key, "k2", 2), 0);

	// Changing or freeing the original leaves the copy intact.
	orig->domain_attr->name[0] = 'X';
	orig->tx_attr->inject_size = 1;
	EXPECT_STREQ(copy->domain_attr->name, "dom");
	EXPECT_EQ(copy->tx_attr->inject_size, 77u);
	fi_freeinfo(orig);
	EXPECT_STREQ(copy->fabric_attr->prov_name, "prov");
	fi_freeinfo(copy);
}

TEST(DupInfo, CopiesOnlyTheFirstElement)
{
	fi_info *first = fi_allocinfo();
	first->next = fi_allocinfo();
	fi_info *copy = fi_dupinfo(first);
	EXPECT_EQ(copy->next, nullptr);
	fi_freeinfo(copy);
	fi_freeinfo(first); // frees the whole list
}

TEST(DupInfo, MissingAttributesStayMissing)
{
	fi_info bare{};
	bare.caps = FI_RMA;
	fi_info *copy = fi_dupinfo(&bare);
	ASSERT_NE(copy, nullptr);
	EXPECT_EQ(copy->caps, FI_RMA);
	EXPECT_EQ(copy->tx_attr, nullptr);
	EXPECT_EQ(copy->fabric_attr, nullptr);
	fi_freeinfo(copy);
}

TEST(DupInfo, AddressLengthWithoutAddressIsDropped)
{
	fi_info bare{};
	bare.src_addrlen = 16; // inconsistent input must not make the copy read NULL
	fi_info *copy = fi_dupinfo(&bare);
	ASSERT_NE(copy, nullptr);
	EXPECT_EQ(copy->src_addr, nullptr);
	EXPECT_EQ(copy->src_addrlen, 0u);
	fi_freeinfo(copy);
}

int nic_closes = 0;

int count_close(fid *)
{
	++nic_closes;
	return 0;
}

TEST(DupInfo, NicBelongsToTheOriginal)
{
	fi_ops nic_ops{};
	nic_ops.size = sizeof(nic_ops);
	nic_ops.close = count_close;
	fid_nic nic{};
	nic.fid.fclass = FI_CLASS_NIC;
	nic.fid.ops = &nic_ops;

	fi_info *orig = fi_allocinfo();
	orig->nic = &nic;
	fi_info *copy = fi_dupinfo(orig);
	ASSERT_NE(copy, nullptr);
	EXPECT_EQ(copy->nic, nullptr);
	nic_closes = 0;
	fi_freeinfo(copy);
	EXPECT_EQ(nic_closes, 0);
	fi_freeinfo(orig); // the owner's NIC object is closed with its info
	EXPECT_EQ(nic_closes, 1);
}

TEST(DupInfo, NullIsSafe)
{
	fi_freeinfo(nullptr);
	fi_info *fresh = fi_dupinfo(nullptr);
	ASSERT_NE(fresh, nullptr);
	fi_freeinfo(fresh);
}

} // namespace
