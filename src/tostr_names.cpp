// The tables list names in the order fi_tostr prints them, which is not always bit order
// (e.g. completion event flags start with FI_SEND); applications and scripts compare this
// text, so the order is part of the output format.
#include "src/tostr_names.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_trigger.h>
#include <rdma/providers/fi_log.h>

#include <span>

namespace ofi::tostr {
namespace {

struct NamedValue {
	int64_t value;
	const char *name;
};

struct NamedBit {
	uint64_t bit;
	const char *name;
};

#define OFI_NAMED(x) { x, #x }

constexpr NamedValue ep_types[] = {
	OFI_NAMED(FI_EP_UNSPEC), OFI_NAMED(FI_EP_MSG), OFI_NAMED(FI_EP_DGRAM),
	OFI_NAMED(FI_EP_RDM), OFI_NAMED(FI_EP_SOCK_STREAM), OFI_NAMED(FI_EP_SOCK_DGRAM),
};

constexpr NamedValue addr_formats[] = {
	OFI_NAMED(FI_FORMAT_UNSPEC), OFI_NAMED(FI_SOCKADDR), OFI_NAMED(FI_SOCKADDR_IN),
	OFI_NAMED(FI_SOCKADDR_IN6), OFI_NAMED(FI_SOCKADDR_IB), OFI_NAMED(FI_ADDR_PSMX),
	OFI_NAMED(FI_ADDR_GNI), OFI_NAMED(FI_ADDR_BGQ), OFI_NAMED(FI_ADDR_MLX),
	OFI_NAMED(FI_ADDR_STR), OFI_NAMED(FI_ADDR_PSMX2), OFI_NAMED(FI_ADDR_IB_UD),
	OFI_NAMED(FI_ADDR_EFA), OFI_NAMED(FI_ADDR_PSMX3), OFI_NAMED(FI_ADDR_OPX),
	OFI_NAMED(FI_ADDR_CXI),
};

// FI_PROTO_MXM and FI_PROTO_MRAIL are retired and print as unknown.
constexpr NamedValue protocols[] = {
	OFI_NAMED(FI_PROTO_UNSPEC), OFI_NAMED(FI_PROTO_RDMA_CM_IB_RC), OFI_NAMED(FI_PROTO_IWARP),
	OFI_NAMED(FI_PROTO_IB_UD), OFI_NAMED(FI_PROTO_PSMX), OFI_NAMED(FI_PROTO_UDP),
	OFI_NAMED(FI_PROTO_SOCK_TCP), OFI_NAMED(FI_PROTO_IWARP_RDM), OFI_NAMED(FI_PROTO_IB_RDM),
	OFI_NAMED(FI_PROTO_GNI), OFI_NAMED(FI_PROTO_RXM), OFI_NAMED(FI_PROTO_RXD),
	OFI_NAMED(FI_PROTO_MLX), OFI_NAMED(FI_PROTO_NETWORKDIRECT), OFI_NAMED(FI_PROTO_PSMX2),
	OFI_NAMED(FI_PROTO_SHM), OFI_NAMED(FI_PROTO_RSTREAM), OFI_NAMED(FI_PROTO_RDMA_CM_IB_XRC),
	OFI_NAMED(FI_PROTO_EFA), OFI_NAMED(FI_PROTO_PSMX3), OFI_NAMED(FI_PROTO_RXM_TCP),
	OFI_NAMED(FI_PROTO_OPX), OFI_NAMED(FI_PROTO_CXI), OFI_NAMED(FI_PROTO_XNET),
};

constexpr NamedValue threadings[] = {
	OFI_NAMED(FI_THREAD_UNSPEC), OFI_NAMED(FI_THREAD_SAFE), OFI_NAMED(FI_THREAD_FID),
	OFI_NAMED(FI_THREAD_DOMAIN), OFI_NAMED(FI_THREAD_COMPLETION),
	OFI_NAMED(FI_THREAD_ENDPOINT),
};

constexpr NamedValue progresses[] = {
	OFI_NAMED(FI_PROGRESS_UNSPEC), OFI_NAMED(FI_PROGRESS_AUTO), OFI_NAMED(FI_PROGRESS_MANUAL),
};

constexpr NamedValue resource_mgmts[] = {
	OFI_NAMED(FI_RM_UNSPEC), OFI_NAMED(FI_RM_DISABLED), OFI_NAMED(FI_RM_ENABLED),
};

constexpr NamedValue av_types[] = {
	OFI_NAMED(FI_AV_UNSPEC), OFI_NAMED(FI_AV_MAP), OFI_NAMED(FI_AV_TABLE),
};

// FI_VOID is a collective-only datatype and has no name here.
constexpr NamedValue atomic_types[] = {
	OFI_NAMED(FI_INT8), OFI_NAMED(FI_UINT8), OFI_NAMED(FI_INT16), OFI_NAMED(FI_UINT16),
	OFI_NAMED(FI_INT32), OFI_NAMED(FI_UINT32), OFI_NAMED(FI_INT64), OFI_NAMED(FI_UINT64),
	OFI_NAMED(FI_FLOAT), OFI_NAMED(FI_DOUBLE), OFI_NAMED(FI_FLOAT_COMPLEX),
	OFI_NAMED(FI_DOUBLE_COMPLEX), OFI_NAMED(FI_LONG_DOUBLE),
	OFI_NAMED(FI_LONG_DOUBLE_COMPLEX), OFI_NAMED(FI_INT128), OFI_NAMED(FI_UINT128),
};

// Likewise FI_NOOP.
constexpr NamedValue atomic_ops[] = {
	OFI_NAMED(FI_MIN), OFI_NAMED(FI_MAX), OFI_NAMED(FI_SUM), OFI_NAMED(FI_PROD),
	OFI_NAMED(FI_LOR), OFI_NAMED(FI_LAND), OFI_NAMED(FI_BOR), OFI_NAMED(FI_BAND),
	OFI_NAMED(FI_LXOR), OFI_NAMED(FI_BXOR), OFI_NAMED(FI_ATOMIC_READ),
	OFI_NAMED(FI_ATOMIC_WRITE), OFI_NAMED(FI_CSWAP), OFI_NAMED(FI_CSWAP_NE),
	OFI_NAMED(FI_CSWAP_LE), OFI_NAMED(FI_CSWAP_LT), OFI_NAMED(FI_CSWAP_GE),
	OFI_NAMED(FI_CSWAP_GT), OFI_NAMED(FI_MSWAP),
};

constexpr NamedValue eq_events[] = {
	OFI_NAMED(FI_NOTIFY), OFI_NAMED(FI_CONNREQ), OFI_NAMED(FI_CONNECTED),
	OFI_NAMED(FI_SHUTDOWN), OFI_NAMED(FI_MR_COMPLETE), OFI_NAMED(FI_AV_COMPLETE),
	OFI_NAMED(FI_JOIN_COMPLETE),
};

constexpr NamedValue op_types[] = {
	OFI_NAMED(FI_OP_RECV), OFI_NAMED(FI_OP_SEND), OFI_NAMED(FI_OP_TRECV),
	OFI_NAMED(FI_OP_TSEND), OFI_NAMED(FI_OP_READ), OFI_NAMED(FI_OP_WRITE),
	OFI_NAMED(FI_OP_ATOMIC), OFI_NAMED(FI_OP_FETCH_ATOMIC), OFI_NAMED(FI_OP_COMPARE_ATOMIC),
	OFI_NAMED(FI_OP_CNTR_SET), OFI_NAMED(FI_OP_CNTR_ADD),
};

constexpr NamedValue collective_ops[] = {
	OFI_NAMED(FI_BARRIER), OFI_NAMED(FI_BROADCAST), OFI_NAMED(FI_ALLTOALL),
	OFI_NAMED(FI_ALLREDUCE), OFI_NAMED(FI_ALLGATHER), OFI_NAMED(FI_REDUCE_SCATTER),
	OFI_NAMED(FI_REDUCE), OFI_NAMED(FI_SCATTER), OFI_NAMED(FI_GATHER),
};

constexpr NamedValue hmem_ifaces[] = {
	OFI_NAMED(FI_HMEM_SYSTEM), OFI_NAMED(FI_HMEM_CUDA), OFI_NAMED(FI_HMEM_ROCR),
	OFI_NAMED(FI_HMEM_ZE), OFI_NAMED(FI_HMEM_NEURON), OFI_NAMED(FI_HMEM_SYNAPSEAI),
};

constexpr NamedValue cq_formats[] = {
	OFI_NAMED(FI_CQ_FORMAT_UNSPEC), OFI_NAMED(FI_CQ_FORMAT_CONTEXT),
	OFI_NAMED(FI_CQ_FORMAT_MSG), OFI_NAMED(FI_CQ_FORMAT_DATA),
	OFI_NAMED(FI_CQ_FORMAT_TAGGED),
};

// Log levels and subsystems print as the words FI_LOG_LEVEL / FI_LOG_SUBSYS accept.
constexpr NamedValue log_levels[] = {
	{ FI_LOG_WARN, "warn" }, { FI_LOG_TRACE, "trace" },
	{ FI_LOG_INFO, "info" }, { FI_LOG_DEBUG, "debug" },
};

constexpr NamedValue log_subsystems[] = {
	{ FI_LOG_CORE, "core" }, { FI_LOG_FABRIC, "fabric" }, { FI_LOG_DOMAIN, "domain" },
	{ FI_LOG_EP_CTRL, "ep_ctrl" }, { FI_LOG_EP_DATA, "ep_data" }, { FI_LOG_AV, "av" },
	{ FI_LOG_CQ, "cq" }, { FI_LOG_EQ, "eq" }, { FI_LOG_MR, "mr" }, { FI_LOG_CNTR, "cntr" },
};

// Capabilities: primary ones first, then secondary, FI_HMEM last.
constexpr NamedBit caps[] = {
	OFI_NAMED(FI_MSG), OFI_NAMED(FI_RMA), OFI_NAMED(FI_TAGGED), OFI_NAMED(FI_ATOMIC),
	OFI_NAMED(FI_MULTICAST), OFI_NAMED(FI_COLLECTIVE), OFI_NAMED(FI_READ),
	OFI_NAMED(FI_WRITE), OFI_NAMED(FI_RECV), OFI_NAMED(FI_SEND),
	OFI_NAMED(FI_REMOTE_READ), OFI_NAMED(FI_REMOTE_WRITE), OFI_NAMED(FI_MULTI_RECV),
	OFI_NAMED(FI_REMOTE_CQ_DATA), OFI_NAMED(FI_TRIGGER), OFI_NAMED(FI_FENCE),
	OFI_NAMED(FI_VARIABLE_MSG), OFI_NAMED(FI_RMA_PMEM), OFI_NAMED(FI_SOURCE_ERR),
	OFI_NAMED(FI_LOCAL_COMM), OFI_NAMED(FI_REMOTE_COMM), OFI_NAMED(FI_SHARED_AV),
	OFI_NAMED(FI_RMA_EVENT), OFI_NAMED(FI_SOURCE), OFI_NAMED(FI_NAMED_RX_CTX),
	OFI_NAMED(FI_DIRECTED_RECV), OFI_NAMED(FI_HMEM),
};

// Bits 58/59 mean FI_DISCARD/FI_CLAIM for operations, hence the different names.
constexpr NamedBit op_flags[] = {
	OFI_NAMED(FI_MULTICAST), OFI_NAMED(FI_MULTI_RECV), OFI_NAMED(FI_REMOTE_CQ_DATA),
	OFI_NAMED(FI_MORE), OFI_NAMED(FI_PEEK), OFI_NAMED(FI_TRIGGER), OFI_NAMED(FI_FENCE),
	OFI_NAMED(FI_COMPLETION), OFI_NAMED(FI_INJECT), OFI_NAMED(FI_INJECT_COMPLETE),
	OFI_NAMED(FI_TRANSMIT_COMPLETE), OFI_NAMED(FI_DELIVERY_COMPLETE),
	OFI_NAMED(FI_MATCH_COMPLETE), OFI_NAMED(FI_AFFINITY), OFI_NAMED(FI_CLAIM),
	OFI_NAMED(FI_DISCARD),
};

constexpr NamedBit msg_orders[] = {
	OFI_NAMED(FI_ORDER_RAR), OFI_NAMED(FI_ORDER_RAW), OFI_NAMED(FI_ORDER_RAS),
	OFI_NAMED(FI_ORDER_WAR), OFI_NAMED(FI_ORDER_WAW), OFI_NAMED(FI_ORDER_WAS),
	OFI_NAMED(FI_ORDER_SAR), OFI_NAMED(FI_ORDER_SAW), OFI_NAMED(FI_ORDER_SAS),
	OFI_NAMED(FI_ORDER_RMA_RAR), OFI_NAMED(FI_ORDER_RMA_RAW),
	OFI_NAMED(FI_ORDER_RMA_WAR), OFI_NAMED(FI_ORDER_RMA_WAW),
	OFI_NAMED(FI_ORDER_ATOMIC_RAR), OFI_NAMED(FI_ORDER_ATOMIC_RAW),
	OFI_NAMED(FI_ORDER_ATOMIC_WAR), OFI_NAMED(FI_ORDER_ATOMIC_WAW),
};

// From the highest mode bit down.
constexpr NamedBit modes[] = {
	OFI_NAMED(FI_CONTEXT), OFI_NAMED(FI_MSG_PREFIX), OFI_NAMED(FI_ASYNC_IOV),
	OFI_NAMED(FI_RX_CQ_DATA), OFI_NAMED(FI_LOCAL_MR), OFI_NAMED(FI_NOTIFY_FLAGS_ONLY),
	OFI_NAMED(FI_RESTRICTED_COMP), OFI_NAMED(FI_CONTEXT2), OFI_NAMED(FI_BUFFERED_RECV),
};

constexpr NamedBit cq_event_flags[] = {
	OFI_NAMED(FI_SEND), OFI_NAMED(FI_RECV), OFI_NAMED(FI_RMA), OFI_NAMED(FI_ATOMIC),
	OFI_NAMED(FI_MSG), OFI_NAMED(FI_TAGGED), OFI_NAMED(FI_READ), OFI_NAMED(FI_WRITE),
	OFI_NAMED(FI_REMOTE_READ), OFI_NAMED(FI_REMOTE_WRITE), OFI_NAMED(FI_REMOTE_CQ_DATA),
	OFI_NAMED(FI_MULTI_RECV), OFI_NAMED(FI_MORE), OFI_NAMED(FI_CLAIM),
};

// The two lowest bits are the old enum values FI_MR_BASIC and FI_MR_SCALABLE.
constexpr NamedBit mr_modes[] = {
	OFI_NAMED(FI_MR_BASIC), OFI_NAMED(FI_MR_SCALABLE), OFI_NAMED(FI_MR_LOCAL),
	OFI_NAMED(FI_MR_RAW), OFI_NAMED(FI_MR_VIRT_ADDR), OFI_NAMED(FI_MR_ALLOCATED),
	OFI_NAMED(FI_MR_PROV_KEY), OFI_NAMED(FI_MR_MMU_NOTIFY), OFI_NAMED(FI_MR_RMA_EVENT),
	OFI_NAMED(FI_MR_ENDPOINT), OFI_NAMED(FI_MR_HMEM), OFI_NAMED(FI_MR_COLLECTIVE),
};

#undef OFI_NAMED

std::span<const NamedValue> names_of(EnumKind kind)
{
	switch (kind) {
	case EnumKind::ep_type: return ep_types;
	case EnumKind::addr_format: return addr_formats;
	case EnumKind::protocol: return protocols;
	case EnumKind::threading: return threadings;
	case EnumKind::progress: return progresses;
	case EnumKind::resource_mgmt: return resource_mgmts;
	case EnumKind::av_type: return av_types;
	case EnumKind::atomic_type: return atomic_types;
	case EnumKind::atomic_op: return atomic_ops;
	case EnumKind::eq_event: return eq_events;
	case EnumKind::op_type: return op_types;
	case EnumKind::collective_op: return collective_ops;
	case EnumKind::hmem_iface: return hmem_ifaces;
	case EnumKind::cq_format: return cq_formats;
	case EnumKind::log_level: return log_levels;
	case EnumKind::log_subsys: return log_subsystems;
	}
	return {};
}

std::span<const NamedBit> names_of(FlagKind kind)
{
	switch (kind) {
	case FlagKind::caps: return caps;
	case FlagKind::op_flags: return op_flags;
	case FlagKind::msg_order: return msg_orders;
	case FlagKind::mode: return modes;
	case FlagKind::cq_event_flags: return cq_event_flags;
	case FlagKind::mr_mode: return mr_modes;
	}
	return {};
}

bool has_provider_specific_range(EnumKind kind)
{
	return kind == EnumKind::addr_format || kind == EnumKind::protocol;
}

} // namespace

void write_enum(TextSink &out, EnumKind kind, int64_t value)
{
	if (has_provider_specific_range(kind) && (value & FI_PROV_SPECIFIC)) {
		out.append("Provider specific");
		return;
	}
	for (const NamedValue &entry : names_of(kind)) {
		if (entry.value == value) {
			out.append("%s", entry.name);
			return;
		}
	}
	out.append("Unknown");
}

void write_flags(TextSink &out, FlagKind kind, uint64_t value)
{
	for (const NamedBit &entry : names_of(kind)) {
		if (value & entry.bit)
			out.append("%s, ", entry.name);
	}
	out.drop_trailing_separator();
}

void write_comp_order(TextSink &out, uint64_t value)
{
	if (!(value & FI_ORDER_STRICT))
		out.append("FI_ORDER_NONE, ");
	if ((value & FI_ORDER_STRICT) == FI_ORDER_STRICT)
		out.append("FI_ORDER_STRICT, ");
	if (value & FI_ORDER_DATA)
		out.append("FI_ORDER_DATA, ");
	out.drop_trailing_separator();
}

} // namespace ofi::tostr
