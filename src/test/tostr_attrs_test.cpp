// fi_tostr of fi_info and its attribute structures, as fi_info -v shows them.
#include "src/test/tostr_test_util.h"

#include <rdma/fabric.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace {

TEST(TostrAttrs, TransmitAttributes)
{
	fi_tx_attr attr{};
	attr.caps = FI_MSG | FI_SEND;
	attr.mode = FI_CONTEXT;
	attr.op_flags = FI_INJECT | FI_COMPLETION;
	attr.msg_order = FI_ORDER_SAS;
	attr.comp_order = FI_ORDER_STRICT;
	attr.inject_size = 5;
	attr.size = 6;
	attr.iov_limit = 7;
	attr.rma_iov_limit = 8;
	attr.tclass = FI_TC_BULK_DATA;
	EXPECT_EQ(tostr(&attr, FI_TYPE_TX_ATTR),
		  "fi_tx_attr:\n"
		  "    caps: [ FI_MSG, FI_SEND ]\n"
		  "    mode: [ FI_CONTEXT ]\n"
		  "    op_flags: [ FI_COMPLETION, FI_INJECT ]\n"
		  "    msg_order: [ FI_ORDER_SAS ]\n"
		  "    comp_order: [ FI_ORDER_STRICT ]\n"
		  "    inject_size: 5\n"
		  "    size: 6\n"
		  "    iov_limit: 7\n"
		  "    rma_iov_limit: 8\n"
		  "    tclass: 0x203\n");
}

// Completion order only knows "none" (no ordering bit), "strict" (all of them) and DATA.
TEST(TostrAttrs, CompletionOrder)
{
	fi_rx_attr attr{};
	auto comp_order_line = [&attr](uint64_t order) {
		attr.comp_order = order;
		std::string text = tostr(&attr, FI_TYPE_RX_ATTR);
		size_t start = text.find("comp_order");
		return text.substr(start, text.find('\n', start) - start);
	};
	EXPECT_EQ(comp_order_line(0), "comp_order: [ FI_ORDER_NONE ]");
	EXPECT_EQ(comp_order_line(FI_ORDER_DATA), "comp_order: [ FI_ORDER_NONE, FI_ORDER_DATA ]");
	EXPECT_EQ(comp_order_line(FI_ORDER_STRICT | FI_ORDER_DATA),
		  "comp_order: [ FI_ORDER_STRICT, FI_ORDER_DATA ]");
	EXPECT_EQ(comp_order_line(FI_ORDER_RAR), "comp_order: [  ]");
	EXPECT_EQ(comp_order_line(FI_ORDER_RMA_RAR), "comp_order: [ FI_ORDER_NONE ]");
}

TEST(TostrAttrs, ReceiveAttributes)
{
	fi_rx_attr attr{};
	attr.caps = FI_MSG | FI_RECV;
	attr.total_buffered_recv = 9;
	attr.size = 10;
	attr.iov_limit = 11;
	EXPECT_EQ(tostr(&attr, FI_TYPE_RX_ATTR),
		  "fi_rx_attr:\n"
		  "    caps: [ FI_MSG, FI_RECV ]\n"
		  "    mode: [  ]\n"
		  "    op_flags: [  ]\n"
		  "    msg_order: [  ]\n"
		  "    comp_order: [ FI_ORDER_NONE ]\n"
		  "    total_buffered_recv: 9\n"
		  "    size: 10\n"
		  "    iov_limit: 11\n");
}

TEST(TostrAttrs, EndpointAttributes)
{
	uint8_t key[3] = { 1, 2, 3 };
	fi_ep_attr attr{};
	attr.type = FI_EP_RDM;
	attr.protocol = FI_PROTO_RXM;
	attr.protocol_version = 0xffffffffu;	// shown signed
	attr.max_msg_size = SIZE_MAX;
	attr.mem_tag_format = 0x1234;
	attr.tx_ctx_cnt = FI_SHARED_CONTEXT;
	attr.rx_ctx_cnt = 1;
	attr.auth_key_size = sizeof key;
	attr.auth_key = key;	// never printed
	EXPECT_EQ(tostr(&attr, FI_TYPE_EP_ATTR),
		  "fi_ep_attr:\n"
		  "    type: FI_EP_RDM\n"
		  "    protocol: FI_PROTO_RXM\n"
		  "    protocol_version: -1\n"
		  "    max_msg_size: 18446744073709551615\n"
		  "    msg_prefix_size: 0\n"
		  "    max_order_raw_size: 0\n"
		  "    max_order_war_size: 0\n"
		  "    max_order_waw_size: 0\n"
		  "    mem_tag_format: 0x0000000000001234\n"
		  "    tx_ctx_cnt: FI_SHARED_CONTEXT\n"
		  "    rx_ctx_cnt: 1\n"
		  "    auth_key_size: 3\n");
}

TEST(TostrAttrs, DomainAttributes)
{
	fi_domain_attr attr{};
	attr.domain = reinterpret_cast<fid_domain *>(uintptr_t{0x1234567890});
	attr.name = const_cast<char *>("lo");
	attr.threading = FI_THREAD_DOMAIN;
	attr.control_progress = FI_PROGRESS_AUTO;
	attr.data_progress = FI_PROGRESS_MANUAL;
	attr.resource_mgmt = FI_RM_ENABLED;
	attr.av_type = FI_AV_TABLE;
	attr.mr_mode = FI_MR_VIRT_ADDR | FI_MR_PROV_KEY;
	attr.tx_ctx_cnt = SIZE_MAX;	// no FI_SHARED_CONTEXT spelling here
	attr.caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	attr.tclass = FI_TC_DSCP | 5;
	EXPECT_EQ(tostr(&attr, FI_TYPE_DOMAIN_ATTR),
		  "fi_domain_attr:\n"
		  "    domain: 0x34567890\n"	// only the low 32 bits
		  "    name: lo\n"
		  "    threading: FI_THREAD_DOMAIN\n"
		  "    control_progress: FI_PROGRESS_AUTO\n"
		  "    data_progress: FI_PROGRESS_MANUAL\n"
		  "    resource_mgmt: FI_RM_ENABLED\n"
		  "    av_type: FI_AV_TABLE\n"
		  "    mr_mode: [ FI_MR_VIRT_ADDR, FI_MR_PROV_KEY ]\n"
		  "    mr_key_size: 0\n"
		  "    cq_data_size: 0\n"
		  "    cq_cnt: 0\n"
		  "    ep_cnt: 0\n"
		  "    tx_ctx_cnt: 18446744073709551615\n"
		  "    rx_ctx_cnt: 0\n"
		  "    max_ep_tx_ctx: 0\n"
		  "    max_ep_rx_ctx: 0\n"
		  "    max_ep_stx_ctx: 0\n"
		  "    max_ep_srx_ctx: 0\n"
		  "    cntr_cnt: 0\n"
		  "    mr_iov_limit: 0\n"
		  "    caps: [ FI_LOCAL_COMM, FI_REMOTE_COMM ]\n"
		  "    mode: [  ]\n"
		  "    auth_key_size: 0\n"
		  "    max_err_data: 0\n"
		  "    mr_cnt: 0\n"
		  "    tclass: 0x105\n");
}

TEST(TostrAttrs, DomainAttributesUnknownValuesAndNoName)
{
	fi_domain_attr attr{};
	attr.threading = static_cast<fi_threading>(99);
	attr.resource_mgmt = static_cast<fi_resource_mgmt>(3);
	std::string text = tostr(&attr, FI_TYPE_DOMAIN_ATTR);
	EXPECT_NE(text.find("    domain: 0x0\n    name: (null)\n    threading: Unknown\n"),
		  std::string::npos);
	EXPECT_NE(text.find("    resource_mgmt: Unknown\n"), std::string::npos);
}

TEST(TostrAttrs, FabricAttributes)
{
	fi_fabric_attr attr{};
	attr.fabric = reinterpret_cast<fid_fabric *>(uintptr_t{0x20});	// never printed
	attr.name = const_cast<char *>("127.0.0.1/32");
	attr.prov_name = const_cast<char *>("tcp;ofi_rxm");
	attr.prov_version = FI_VERSION(117, 0);
	attr.api_version = FI_VERSION(1, 9);
	EXPECT_EQ(tostr(&attr, FI_TYPE_FABRIC_ATTR),
		  "fi_fabric_attr:\n"
		  "    name: 127.0.0.1/32\n"
		  "    prov_name: tcp;ofi_rxm\n"
		  "    prov_version: 117.0\n"
		  "    api_version: 1.9\n");
	fi_fabric_attr empty{};
	EXPECT_EQ(tostr(&empty, FI_TYPE_FABRIC_ATTR),
		  "fi_fabric_attr:\n"
		  "    name: (null)\n"
		  "    prov_name: (null)\n"
		  "    prov_version: 0.0\n"
		  "    api_version: 0.0\n");
}

TEST(TostrAttrs, InfoWithoutAttributes)
{
	fi_info info{};
	EXPECT_EQ(tostr(&info, FI_TYPE_INFO),
		  "fi_info:\n"
		  "    caps: [  ]\n"
		  "    mode: [  ]\n"
		  "    addr_format: FI_FORMAT_UNSPEC\n"
		  "    src_addrlen: 0\n"
		  "    dest_addrlen: 0\n"
		  "    src_addr: (null)\n"
		  "    dest_addr: (null)\n"
		  "    handle: (nil)\n"
		  "    fi_tx_attr: (null)\n"
		  "    fi_rx_attr: (null)\n"
		  "    fi_ep_attr: (null)\n"
		  "    fi_domain_attr: (null)\n"
		  "    fi_fabric_attr: (null)\n"
		  "    nic: (nil)\n");
}

TEST(TostrAttrs, InfoNestsAttributesOneLevelDeeper)
{
	fi_tx_attr tx{};
	fi_fabric_attr fabric{};
	fabric.prov_name = const_cast<char *>("tcp");
	fi_info info{};
	info.caps = FI_MSG;
	info.mode = FI_CONTEXT;
	info.tx_attr = &tx;
	info.fabric_attr = &fabric;
	std::string text = tostr(&info, FI_TYPE_INFO);
	EXPECT_NE(text.find("    caps: [ FI_MSG ]\n    mode: [ FI_CONTEXT ]\n"), std::string::npos);
	EXPECT_NE(text.find("    fi_tx_attr:\n        caps: [  ]\n"), std::string::npos);
	EXPECT_NE(text.find("        tclass: 0x0\n    fi_rx_attr: (null)\n"), std::string::npos);
	EXPECT_NE(text.find("    fi_fabric_attr:\n        name: (null)\n        prov_name: tcp\n"),
		  std::string::npos);
}

// Appends where the text so far ends, and remembers how much room it was offered.
size_t room_offered;

int describe_fid(const fid *, char *buf, size_t len)
{
	room_offered = len;
	if (len > 32)
		strcat(buf, "<object>\n");
	return 0;
}

fi_ops ops_that_describe()
{
	fi_ops ops{};
	ops.size = sizeof ops;
	ops.tostr = describe_fid;
	return ops;
}

TEST(TostrAttrs, FidWithoutDescriptionPrintsItsAddress)
{
	fi_ops ops{};
	ops.size = sizeof ops;
	fid object{ FI_CLASS_EP, nullptr, &ops };
	char expected[64];
	snprintf(expected, sizeof expected, "fid: %p\n", static_cast<void *>(&object));
	EXPECT_EQ(tostr(&object, FI_TYPE_FID), expected);

	// An ops table too old to have tostr is not read past its end.
	fi_ops old_ops = ops_that_describe();
	old_ops.size = offsetof(fi_ops, tostr);
	fid old_object{ FI_CLASS_EP, nullptr, &old_ops };
	snprintf(expected, sizeof expected, "fid: %p\n", static_cast<void *>(&old_object));
	EXPECT_EQ(tostr(&old_object, FI_TYPE_FID), expected);
}

TEST(TostrAttrs, FidDescribesItselfInTheSpaceLeft)
{
	fi_ops ops = ops_that_describe();
	fid object{ FI_CLASS_EP, nullptr, &ops };
	EXPECT_EQ(tostr(&object, FI_TYPE_FID, 100), "<object>\n");
	EXPECT_EQ(room_offered, 100u);

	fid_nic nic{};
	nic.fid.ops = &ops;
	fi_info info{};
	info.handle = &object;
	info.nic = &nic;
	std::string text = tostr(&info, FI_TYPE_INFO, 4096);
	const char *before_handle = "    dest_addr: (null)\n";
	size_t handle_at = text.find(before_handle) + strlen(before_handle);
	EXPECT_EQ(text.substr(handle_at, 13), "<object>\n    ");
	EXPECT_EQ(text.substr(text.size() - 9), "<object>\n");
	EXPECT_EQ(room_offered, 4096 - (text.size() - 9));
	EXPECT_EQ(text.find("handle:"), std::string::npos);
	EXPECT_EQ(text.find("nic:"), std::string::npos);
}

TEST(TostrAttrs, NicWithoutDescriptionPrintsItsAddress)
{
	fi_ops ops{};
	ops.size = sizeof ops;
	fid_nic nic{};
	nic.fid.ops = &ops;
	fi_info info{};
	info.nic = &nic;
	char expected[64];
	snprintf(expected, sizeof expected, "    nic: %p\n", static_cast<void *>(&nic));
	std::string text = tostr(&info, FI_TYPE_INFO);
	EXPECT_EQ(text.substr(text.size() - strlen(expected)), expected);
}

} // namespace
