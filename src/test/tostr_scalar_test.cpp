// fi_tostr of enum and flag types. Expected texts are those libfabric 1.17 prints.
#include "src/test/tostr_test_util.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_log.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace {

TEST(TostrEnum, EndpointTypes)
{
	EXPECT_EQ(tostr_value(FI_EP_UNSPEC, FI_TYPE_EP_TYPE), "FI_EP_UNSPEC");
	EXPECT_EQ(tostr_value(FI_EP_MSG, FI_TYPE_EP_TYPE), "FI_EP_MSG");
	EXPECT_EQ(tostr_value(FI_EP_DGRAM, FI_TYPE_EP_TYPE), "FI_EP_DGRAM");
	EXPECT_EQ(tostr_value(FI_EP_RDM, FI_TYPE_EP_TYPE), "FI_EP_RDM");
	EXPECT_EQ(tostr_value(FI_EP_SOCK_STREAM, FI_TYPE_EP_TYPE), "FI_EP_SOCK_STREAM");
	EXPECT_EQ(tostr_value(FI_EP_SOCK_DGRAM, FI_TYPE_EP_TYPE), "FI_EP_SOCK_DGRAM");
	EXPECT_EQ(tostr_value(6, FI_TYPE_EP_TYPE), "Unknown");
	EXPECT_EQ(tostr_value(-1, FI_TYPE_EP_TYPE), "Unknown");
}

TEST(TostrEnum, AddressFormatsIncludingProviderSpecificRange)
{
	EXPECT_EQ(tostr_value(uint32_t{FI_FORMAT_UNSPEC}, FI_TYPE_ADDR_FORMAT), "FI_FORMAT_UNSPEC");
	EXPECT_EQ(tostr_value(uint32_t{FI_SOCKADDR_IN6}, FI_TYPE_ADDR_FORMAT), "FI_SOCKADDR_IN6");
	EXPECT_EQ(tostr_value(uint32_t{FI_ADDR_STR}, FI_TYPE_ADDR_FORMAT), "FI_ADDR_STR");
	EXPECT_EQ(tostr_value(uint32_t{FI_ADDR_CXI}, FI_TYPE_ADDR_FORMAT), "FI_ADDR_CXI");
	EXPECT_EQ(tostr_value(uint32_t{16}, FI_TYPE_ADDR_FORMAT), "Unknown");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROV_SPECIFIC}, FI_TYPE_ADDR_FORMAT), "Provider specific");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROV_SPECIFIC | 3}, FI_TYPE_ADDR_FORMAT),
		  "Provider specific");
}

TEST(TostrEnum, ProtocolsSkipRetiredValues)
{
	EXPECT_EQ(tostr_value(uint32_t{FI_PROTO_SOCK_TCP}, FI_TYPE_PROTOCOL), "FI_PROTO_SOCK_TCP");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROTO_RXM}, FI_TYPE_PROTOCOL), "FI_PROTO_RXM");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROTO_RDMA_CM_IB_RC}, FI_TYPE_PROTOCOL),
		  "FI_PROTO_RDMA_CM_IB_RC");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROTO_XNET}, FI_TYPE_PROTOCOL), "FI_PROTO_XNET");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROTO_MXM}, FI_TYPE_PROTOCOL), "Unknown");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROTO_MRAIL}, FI_TYPE_PROTOCOL), "Unknown");
	EXPECT_EQ(tostr_value(uint32_t{26}, FI_TYPE_PROTOCOL), "Unknown");
	EXPECT_EQ(tostr_value(uint32_t{FI_PROV_SPECIFIC}, FI_TYPE_PROTOCOL), "Provider specific");
}

TEST(TostrEnum, DomainEnums)
{
	EXPECT_EQ(tostr_value(FI_THREAD_UNSPEC, FI_TYPE_THREADING), "FI_THREAD_UNSPEC");
	EXPECT_EQ(tostr_value(FI_THREAD_ENDPOINT, FI_TYPE_THREADING), "FI_THREAD_ENDPOINT");
	EXPECT_EQ(tostr_value(6, FI_TYPE_THREADING), "Unknown");
	EXPECT_EQ(tostr_value(FI_PROGRESS_AUTO, FI_TYPE_PROGRESS), "FI_PROGRESS_AUTO");
	EXPECT_EQ(tostr_value(FI_PROGRESS_MANUAL, FI_TYPE_PROGRESS), "FI_PROGRESS_MANUAL");
	EXPECT_EQ(tostr_value(3, FI_TYPE_PROGRESS), "Unknown");
	EXPECT_EQ(tostr_value(FI_AV_TABLE, FI_TYPE_AV_TYPE), "FI_AV_TABLE");
	EXPECT_EQ(tostr_value(3, FI_TYPE_AV_TYPE), "Unknown");
	EXPECT_EQ(tostr_value(FI_HMEM_SYNAPSEAI, FI_TYPE_HMEM_IFACE), "FI_HMEM_SYNAPSEAI");
	EXPECT_EQ(tostr_value(6, FI_TYPE_HMEM_IFACE), "Unknown");
}

TEST(TostrEnum, AtomicsAndCollectives)
{
	EXPECT_EQ(tostr_value(FI_INT8, FI_TYPE_ATOMIC_TYPE), "FI_INT8");
	EXPECT_EQ(tostr_value(FI_LONG_DOUBLE_COMPLEX, FI_TYPE_ATOMIC_TYPE), "FI_LONG_DOUBLE_COMPLEX");
	EXPECT_EQ(tostr_value(FI_UINT128, FI_TYPE_ATOMIC_TYPE), "FI_UINT128");
	EXPECT_EQ(tostr_value(FI_VOID, FI_TYPE_ATOMIC_TYPE), "Unknown");
	EXPECT_EQ(tostr_value(FI_MIN, FI_TYPE_ATOMIC_OP), "FI_MIN");
	EXPECT_EQ(tostr_value(FI_MSWAP, FI_TYPE_ATOMIC_OP), "FI_MSWAP");
	EXPECT_EQ(tostr_value(FI_NOOP, FI_TYPE_ATOMIC_OP), "Unknown");
	EXPECT_EQ(tostr_value(FI_BARRIER, FI_TYPE_COLLECTIVE_OP), "FI_BARRIER");
	EXPECT_EQ(tostr_value(FI_GATHER, FI_TYPE_COLLECTIVE_OP), "FI_GATHER");
	EXPECT_EQ(tostr_value(9, FI_TYPE_COLLECTIVE_OP), "Unknown");
}

TEST(TostrEnum, EventsOperationsAndFormats)
{
	EXPECT_EQ(tostr_value(FI_NOTIFY, FI_TYPE_EQ_EVENT), "FI_NOTIFY");
	EXPECT_EQ(tostr_value(FI_CONNREQ, FI_TYPE_EQ_EVENT), "FI_CONNREQ");
	EXPECT_EQ(tostr_value(FI_JOIN_COMPLETE, FI_TYPE_EQ_EVENT), "FI_JOIN_COMPLETE");
	EXPECT_EQ(tostr_value(7, FI_TYPE_EQ_EVENT), "Unknown");
	EXPECT_EQ(tostr_value(FI_OP_RECV, FI_TYPE_OP_TYPE), "FI_OP_RECV");
	EXPECT_EQ(tostr_value(FI_OP_CNTR_ADD, FI_TYPE_OP_TYPE), "FI_OP_CNTR_ADD");
	EXPECT_EQ(tostr_value(11, FI_TYPE_OP_TYPE), "Unknown");
	EXPECT_EQ(tostr_value(FI_CQ_FORMAT_TAGGED, FI_TYPE_CQ_FORMAT), "FI_CQ_FORMAT_TAGGED");
	EXPECT_EQ(tostr_value(5, FI_TYPE_CQ_FORMAT), "Unknown");
}

TEST(TostrEnum, LogLevelsAndSubsystemsUseTheirEnvironmentWords)
{
	EXPECT_EQ(tostr_value(FI_LOG_WARN, FI_TYPE_LOG_LEVEL), "warn");
	EXPECT_EQ(tostr_value(FI_LOG_DEBUG, FI_TYPE_LOG_LEVEL), "debug");
	EXPECT_EQ(tostr_value(FI_LOG_MAX, FI_TYPE_LOG_LEVEL), "Unknown");
	EXPECT_EQ(tostr_value(FI_LOG_CORE, FI_TYPE_LOG_SUBSYS), "core");
	EXPECT_EQ(tostr_value(FI_LOG_EP_CTRL, FI_TYPE_LOG_SUBSYS), "ep_ctrl");
	EXPECT_EQ(tostr_value(FI_LOG_CNTR, FI_TYPE_LOG_SUBSYS), "cntr");
	EXPECT_EQ(tostr_value(FI_LOG_SUBSYS_MAX, FI_TYPE_LOG_SUBSYS), "Unknown");
}

TEST(TostrFlags, CapsInPrintOrderAndUnknownBitsLeftOut)
{
	EXPECT_EQ(tostr_value(uint64_t{0}, FI_TYPE_CAPS), "");
	EXPECT_EQ(tostr_value(uint64_t{FI_MSG | FI_RMA}, FI_TYPE_CAPS), "FI_MSG, FI_RMA");
	EXPECT_EQ(tostr_value(uint64_t{FI_HMEM | FI_MSG}, FI_TYPE_CAPS), "FI_MSG, FI_HMEM");
	EXPECT_EQ(tostr_value(uint64_t{FI_INJECT | FI_AV_USER_ID | 1}, FI_TYPE_CAPS), "");
	EXPECT_EQ(tostr_value(~uint64_t{0}, FI_TYPE_CAPS),
		  "FI_MSG, FI_RMA, FI_TAGGED, FI_ATOMIC, FI_MULTICAST, FI_COLLECTIVE, FI_READ, "
		  "FI_WRITE, FI_RECV, FI_SEND, FI_REMOTE_READ, FI_REMOTE_WRITE, FI_MULTI_RECV, "
		  "FI_REMOTE_CQ_DATA, FI_TRIGGER, FI_FENCE, FI_VARIABLE_MSG, FI_RMA_PMEM, "
		  "FI_SOURCE_ERR, FI_LOCAL_COMM, FI_REMOTE_COMM, FI_SHARED_AV, FI_RMA_EVENT, "
		  "FI_SOURCE, FI_NAMED_RX_CTX, FI_DIRECTED_RECV, FI_HMEM");
}

TEST(TostrFlags, OperationFlagsNameSharedBitsAsOperationFlags)
{
	EXPECT_EQ(tostr_value(uint64_t{FI_CLAIM | FI_DISCARD}, FI_TYPE_OP_FLAGS),
		  "FI_CLAIM, FI_DISCARD");
	EXPECT_EQ(tostr_value(uint64_t{FI_MSG | FI_RMA}, FI_TYPE_OP_FLAGS), "");
	EXPECT_EQ(tostr_value(~uint64_t{0}, FI_TYPE_OP_FLAGS),
		  "FI_MULTICAST, FI_MULTI_RECV, FI_REMOTE_CQ_DATA, FI_MORE, FI_PEEK, FI_TRIGGER, "
		  "FI_FENCE, FI_COMPLETION, FI_INJECT, FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, "
		  "FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE, FI_AFFINITY, FI_CLAIM, FI_DISCARD");
}

TEST(TostrFlags, MessageOrderHasNoNameForNone)
{
	EXPECT_EQ(tostr_value(uint64_t{FI_ORDER_NONE}, FI_TYPE_MSG_ORDER), "");
	EXPECT_EQ(tostr_value(uint64_t{FI_ORDER_DATA}, FI_TYPE_MSG_ORDER), "");
	EXPECT_EQ(tostr_value(uint64_t{FI_ORDER_RAW | FI_ORDER_RAS}, FI_TYPE_MSG_ORDER),
		  "FI_ORDER_RAW, FI_ORDER_RAS");
	EXPECT_EQ(tostr_value(uint64_t{FI_ORDER_RMA_WAW | FI_ORDER_ATOMIC_RAR}, FI_TYPE_MSG_ORDER),
		  "FI_ORDER_RMA_WAW, FI_ORDER_ATOMIC_RAR");
}

TEST(TostrFlags, ModesFromTheHighestBitDown)
{
	EXPECT_EQ(tostr_value(uint64_t{FI_BUFFERED_RECV | FI_CONTEXT}, FI_TYPE_MODE),
		  "FI_CONTEXT, FI_BUFFERED_RECV");
	EXPECT_EQ(tostr_value(uint64_t{FI_PEER_TRANSFER}, FI_TYPE_MODE), "");
	EXPECT_EQ(tostr_value(~uint64_t{0}, FI_TYPE_MODE),
		  "FI_CONTEXT, FI_MSG_PREFIX, FI_ASYNC_IOV, FI_RX_CQ_DATA, FI_LOCAL_MR, "
		  "FI_NOTIFY_FLAGS_ONLY, FI_RESTRICTED_COMP, FI_CONTEXT2, FI_BUFFERED_RECV");
}

TEST(TostrFlags, CompletionEventFlagsStartWithDirection)
{
	EXPECT_EQ(tostr_value(uint64_t{FI_MSG | FI_RMA}, FI_TYPE_CQ_EVENT_FLAGS), "FI_RMA, FI_MSG");
	EXPECT_EQ(tostr_value(~uint64_t{0}, FI_TYPE_CQ_EVENT_FLAGS),
		  "FI_SEND, FI_RECV, FI_RMA, FI_ATOMIC, FI_MSG, FI_TAGGED, FI_READ, FI_WRITE, "
		  "FI_REMOTE_READ, FI_REMOTE_WRITE, FI_REMOTE_CQ_DATA, FI_MULTI_RECV, FI_MORE, "
		  "FI_CLAIM");
}

TEST(TostrFlags, MemoryRegistrationModeIsAnInt)
{
	EXPECT_EQ(tostr_value(int{FI_MR_BASIC | FI_MR_LOCAL}, FI_TYPE_MR_MODE),
		  "FI_MR_BASIC, FI_MR_LOCAL");
	EXPECT_EQ(tostr_value(int{FI_MR_UNSPEC}, FI_TYPE_MR_MODE), "");
	EXPECT_EQ(tostr_value(-1, FI_TYPE_MR_MODE),
		  "FI_MR_BASIC, FI_MR_SCALABLE, FI_MR_LOCAL, FI_MR_RAW, FI_MR_VIRT_ADDR, "
		  "FI_MR_ALLOCATED, FI_MR_PROV_KEY, FI_MR_MMU_NOTIFY, FI_MR_RMA_EVENT, "
		  "FI_MR_ENDPOINT, FI_MR_HMEM, FI_MR_COLLECTIVE");
}

TEST(TostrMisc, VersionIsTheLibraryRelease)
{
	EXPECT_EQ(tostr_value(0, FI_TYPE_VERSION), "1.17.0");
}

TEST(TostrMisc, UnknownTypeIsSaidSo)
{
	EXPECT_EQ(tostr_value(uint64_t{0}, static_cast<enum fi_type>(FI_TYPE_LOG_SUBSYS + 1)),
		  "Unknown type");
	EXPECT_EQ(tostr_value(uint64_t{0}, static_cast<enum fi_type>(-1)), "Unknown type");
}

TEST(TostrMisc, MissingArgumentsGiveNull)
{
	char buf[16];
	uint64_t caps = FI_MSG;
	EXPECT_EQ(fi_tostr_r(buf, sizeof buf, nullptr, FI_TYPE_CAPS), nullptr);
	EXPECT_EQ(fi_tostr_r(nullptr, sizeof buf, &caps, FI_TYPE_CAPS), nullptr);
	EXPECT_EQ(fi_tostr_r(buf, 0, &caps, FI_TYPE_CAPS), nullptr);
	EXPECT_EQ(fi_tostr(nullptr, FI_TYPE_INFO), nullptr);
}

// Each piece may use the buffer up to, but not including, its last byte; a flag list cut
// short still loses its trailing separator.
TEST(TostrMisc, TruncationKeepsTheReferencePrefix)
{
	uint64_t caps = FI_MSG | FI_RMA | FI_TAGGED;
	EXPECT_EQ(tostr(&caps, FI_TYPE_CAPS, 10), "FI_MSG");
	EXPECT_EQ(tostr(&caps, FI_TYPE_CAPS, 1), "");
	EXPECT_EQ(tostr(&caps, FI_TYPE_CAPS, 2), "");
	EXPECT_EQ(tostr(&caps, FI_TYPE_CAPS, 3), "F");
	int ep_type = FI_EP_MSG;
	EXPECT_EQ(tostr(&ep_type, FI_TYPE_EP_TYPE, 4), "FI");
}

TEST(TostrMisc, StaticBufferIsReusedAndHolds8KiB)
{
	uint64_t caps = FI_MSG;
	char *first = fi_tostr(&caps, FI_TYPE_CAPS);
	char *second = fi_tostr(&caps, FI_TYPE_MODE);
	EXPECT_EQ(first, second);

	std::string long_name(20000, 'x');
	fi_domain_attr attr{};
	attr.name = long_name.data();
	EXPECT_EQ(strlen(fi_tostr(&attr, FI_TYPE_DOMAIN_ATTR)), 8190u);
}

} // namespace
