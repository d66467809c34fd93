// fi_tostr / fi_tostr_r: human-readable text for libfabric data types.
#include "src/tostr_attrs.h"
#include "src/tostr_names.h"
#include "src/tostr_writer.h"

#include <rdma/fabric.h>

#include <cstdint>

namespace ofi::tostr {
namespace {

// fi_tostr's result lives until the next call on the same thread.
constexpr size_t static_buffer_size = 8192;
thread_local char static_buffer[static_buffer_size];

// Enum-typed data: the caller passes a pointer to the enum (an int).
void write_enum_at(TextSink &out, EnumKind kind, const void *data)
{
	write_enum(out, kind, *static_cast<const int *>(data));
}

// fi_info stores address formats and protocols as uint32_t.
void write_u32_enum_at(TextSink &out, EnumKind kind, const void *data)
{
	write_enum(out, kind, *static_cast<const uint32_t *>(data));
}

void write_flags_at(TextSink &out, FlagKind kind, const void *data)
{
	write_flags(out, kind, *static_cast<const uint64_t *>(data));
}

void write_any(TextSink &out, const void *data, enum fi_type type)
{
	switch (type) {
	case FI_TYPE_INFO:
		return write_info(out, static_cast<const fi_info *>(data));
	case FI_TYPE_EP_TYPE:
		return write_enum_at(out, EnumKind::ep_type, data);
	case FI_TYPE_CAPS:
		return write_flags_at(out, FlagKind::caps, data);
	case FI_TYPE_OP_FLAGS:
		return write_flags_at(out, FlagKind::op_flags, data);
	case FI_TYPE_ADDR_FORMAT:
		return write_u32_enum_at(out, EnumKind::addr_format, data);
	case FI_TYPE_TX_ATTR:
		return write_tx_attr(out, "", static_cast<const fi_tx_attr *>(data));
	case FI_TYPE_RX_ATTR:
		return write_rx_attr(out, "", static_cast<const fi_rx_attr *>(data));
	case FI_TYPE_EP_ATTR:
		return write_ep_attr(out, "", static_cast<const fi_ep_attr *>(data));
	case FI_TYPE_DOMAIN_ATTR:
		return write_domain_attr(out, "", static_cast<const fi_domain_attr *>(data));
	case FI_TYPE_FABRIC_ATTR:
		return write_fabric_attr(out, "", static_cast<const fi_fabric_attr *>(data));
	case FI_TYPE_THREADING:
		return write_enum_at(out, EnumKind::threading, data);
	case FI_TYPE_PROGRESS:
		return write_enum_at(out, EnumKind::progress, data);
	case FI_TYPE_PROTOCOL:
		return write_u32_enum_at(out, EnumKind::protocol, data);
	case FI_TYPE_MSG_ORDER:
		return write_flags_at(out, FlagKind::msg_order, data);
	case FI_TYPE_MODE:
		return write_flags_at(out, FlagKind::mode, data);
	case FI_TYPE_AV_TYPE:
		return write_enum_at(out, EnumKind::av_type, data);
	case FI_TYPE_ATOMIC_TYPE:
		return write_enum_at(out, EnumKind::atomic_type, data);
	case FI_TYPE_ATOMIC_OP:
		return write_enum_at(out, EnumKind::atomic_op, data);
	case FI_TYPE_VERSION:
		// The library's own release, whatever data points to.
		return out.append("%d.%d.%d", FI_MAJOR_VERSION, FI_MINOR_VERSION,
				  FI_REVISION_VERSION);
	case FI_TYPE_EQ_EVENT:
		return write_enum_at(out, EnumKind::eq_event, data);
	case FI_TYPE_CQ_EVENT_FLAGS:
		return write_flags_at(out, FlagKind::cq_event_flags, data);
	case FI_TYPE_MR_MODE:
		// domain_attr->mr_mode is an int, so only read that much.
		return write_flags(out, FlagKind::mr_mode,
				   static_cast<unsigned>(*static_cast<const int *>(data)));
	case FI_TYPE_OP_TYPE:
		return write_enum_at(out, EnumKind::op_type, data);
	case FI_TYPE_FID:
		return write_fid(out, static_cast<const fid *>(data));
	case FI_TYPE_COLLECTIVE_OP:
		return write_enum_at(out, EnumKind::collective_op, data);
	case FI_TYPE_HMEM_IFACE:
		return write_enum_at(out, EnumKind::hmem_iface, data);
	case FI_TYPE_CQ_FORMAT:
		return write_enum_at(out, EnumKind::cq_format, data);
	case FI_TYPE_LOG_LEVEL:
		return write_enum_at(out, EnumKind::log_level, data);
	case FI_TYPE_LOG_SUBSYS:
		return write_enum_at(out, EnumKind::log_subsys, data);
	}
	out.append("Unknown type");
}

} // namespace
} // namespace ofi::tostr

extern "C" char *fi_tostr_r(char *buf, size_t len, const void *data, enum fi_type datatype)
{
	if (!buf || !len || !data)
		return nullptr;
	buf[0] = '\0';
	ofi::tostr::TextSink out(buf, len);
	ofi::tostr::write_any(out, data, datatype);
	return buf;
}

extern "C" char *fi_tostr(const void *data, enum fi_type datatype)
{
	return fi_tostr_r(ofi::tostr::static_buffer, ofi::tostr::static_buffer_size, data,
			  datatype);
}
