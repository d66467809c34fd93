#include "src/tostr_attrs.h"

#include "src/tostr_addr.h"
#include "src/tostr_names.h"

#include <cinttypes>
#include <cstdint>
#include <cstring>

namespace ofi::tostr {
namespace {

constexpr const char *one_level = "    ";
constexpr const char *two_levels = "        ";

const char *deeper(const char *indent)
{
	return indent[0] ? two_levels : one_level;
}

void write_flag_field(TextSink &out, const char *indent, const char *name, FlagKind kind,
		      uint64_t value)
{
	out.append("%s%s: [ ", indent, name);
	write_flags(out, kind, value);
	out.append(" ]\n");
}

void write_enum_field(TextSink &out, const char *indent, const char *name, EnumKind kind,
		      int64_t value)
{
	out.append("%s%s: ", indent, name);
	write_enum(out, kind, value);
	out.append("\n");
}

void write_size_field(TextSink &out, const char *indent, const char *name, size_t value)
{
	out.append("%s%s: %zu\n", indent, name, value);
}

void write_comp_order_field(TextSink &out, const char *indent, uint64_t value)
{
	out.append("%scomp_order: [ ", indent);
	write_comp_order(out, value);
	out.append(" ]\n");
}

// Endpoint context counts use SIZE_MAX to ask for shared contexts.
void write_context_count(TextSink &out, const char *indent, const char *name, size_t value)
{
	if (value == FI_SHARED_CONTEXT)
		out.append("%s%s: FI_SHARED_CONTEXT\n", indent, name);
	else
		write_size_field(out, indent, name, value);
}

void write_version_field(TextSink &out, const char *indent, const char *name, uint32_t version)
{
	out.append("%s%s: %u.%u\n", indent, name, FI_MAJOR(version), FI_MINOR(version));
}

void write_missing(TextSink &out, const char *indent, const char *heading)
{
	out.append("%s%s: (null)\n", indent, heading);
}

void write_address_field(TextSink &out, const char *name, uint32_t format, const void *addr)
{
	out.append("%s%s: ", one_level, name);
	write_address(out, format, addr);
	out.append("\n");
}

bool can_describe_itself(const fid *object)
{
	return object && FI_CHECK_OP(object->ops, struct fi_ops, tostr);
}

} // namespace

void write_tx_attr(TextSink &out, const char *indent, const fi_tx_attr *attr)
{
	if (!attr)
		return write_missing(out, indent, "fi_tx_attr");
	const char *in = deeper(indent);
	out.append("%sfi_tx_attr:\n", indent);
	write_flag_field(out, in, "caps", FlagKind::caps, attr->caps);
	write_flag_field(out, in, "mode", FlagKind::mode, attr->mode);
	write_flag_field(out, in, "op_flags", FlagKind::op_flags, attr->op_flags);
	write_flag_field(out, in, "msg_order", FlagKind::msg_order, attr->msg_order);
	write_comp_order_field(out, in, attr->comp_order);
	write_size_field(out, in, "inject_size", attr->inject_size);
	write_size_field(out, in, "size", attr->size);
	write_size_field(out, in, "iov_limit", attr->iov_limit);
	write_size_field(out, in, "rma_iov_limit", attr->rma_iov_limit);
	out.append("%stclass: 0x%x\n", in, attr->tclass);
}

void write_rx_attr(TextSink &out, const char *indent, const fi_rx_attr *attr)
{
	if (!attr)
		return write_missing(out, indent, "fi_rx_attr");
	const char *in = deeper(indent);
	out.append("%sfi_rx_attr:\n", indent);
	write_flag_field(out, in, "caps", FlagKind::caps, attr->caps);
	write_flag_field(out, in, "mode", FlagKind::mode, attr->mode);
	write_flag_field(out, in, "op_flags", FlagKind::op_flags, attr->op_flags);
	write_flag_field(out, in, "msg_order", FlagKind::msg_order, attr->msg_order);
	write_comp_order_field(out, in, attr->comp_order);
	write_size_field(out, in, "total_buffered_recv", attr->total_buffered_recv);
	write_size_field(out, in, "size", attr->size);
	write_size_field(out, in, "iov_limit", attr->iov_limit);
}

void write_ep_attr(TextSink &out, const char *indent, const fi_ep_attr *attr)
{
	if (!attr)
		return write_missing(out, indent, "fi_ep_attr");
	const char *in = deeper(indent);
	out.append("%sfi_ep_attr:\n", indent);
	write_enum_field(out, in, "type", EnumKind::ep_type, attr->type);
	write_enum_field(out, in, "protocol", EnumKind::protocol, attr->protocol);
	// Printed signed, as the reference output does.
	out.append("%sprotocol_version: %d\n", in, static_cast<int>(attr->protocol_version));
	write_size_field(out, in, "max_msg_size", attr->max_msg_size);
	write_size_field(out, in, "msg_prefix_size", attr->msg_prefix_size);
	write_size_field(out, in, "max_order_raw_size", attr->max_order_raw_size);
	write_size_field(out, in, "max_order_war_size", attr->max_order_war_size);
	write_size_field(out, in, "max_order_waw_size", attr->max_order_waw_size);
	out.append("%smem_tag_format: 0x%016" PRIx64 "\n", in, attr->mem_tag_format);
	write_context_count(out, in, "tx_ctx_cnt", attr->tx_ctx_cnt);
	write_context_count(out, in, "rx_ctx_cnt", attr->rx_ctx_cnt);
	write_size_field(out, in, "auth_key_size", attr->auth_key_size);
}

void write_domain_attr(TextSink &out, const char *indent, const fi_domain_attr *attr)
{
	if (!attr)
		return write_missing(out, indent, "fi_domain_attr");
	const char *in = deeper(indent);
	out.append("%sfi_domain_attr:\n", indent);
	// Only the low 32 bits of the handle are shown; tools compare this text as it always was.
	out.append("%sdomain: 0x%x\n", in,
		   static_cast<unsigned>(reinterpret_cast<uintptr_t>(attr->domain)));
	out.append("%sname: %s\n", in, attr->name ? attr->name : "(null)");
	write_enum_field(out, in, "threading", EnumKind::threading, attr->threading);
	write_enum_field(out, in, "control_progress", EnumKind::progress, attr->control_progress);
	write_enum_field(out, in, "data_progress", EnumKind::progress, attr->data_progress);
	write_enum_field(out, in, "resource_mgmt", EnumKind::resource_mgmt, attr->resource_mgmt);
	write_enum_field(out, in, "av_type", EnumKind::av_type, attr->av_type);
	// mr_mode is an int; keep its bits as they are rather than sign-extending.
	write_flag_field(out, in, "mr_mode", FlagKind::mr_mode, static_cast<unsigned>(attr->mr_mode));
	write_size_field(out, in, "mr_key_size", attr->mr_key_size);
	write_size_field(out, in, "cq_data_size", attr->cq_data_size);
	write_size_field(out, in, "cq_cnt", attr->cq_cnt);
	write_size_field(out, in, "ep_cnt", attr->ep_cnt);
	write_size_field(out, in, "tx_ctx_cnt", attr->tx_ctx_cnt);
	write_size_field(out, in, "rx_ctx_cnt", attr->rx_ctx_cnt);
	write_size_field(out, in, "max_ep_tx_ctx", attr->max_ep_tx_ctx);
	write_size_field(out, in, "max_ep_rx_ctx", attr->max_ep_rx_ctx);
	write_size_field(out, in, "max_ep_stx_ctx", attr->max_ep_stx_ctx);
	write_size_field(out, in, "max_ep_srx_ctx", attr->max_ep_srx_ctx);
	write_size_field(out, in, "cntr_cnt", attr->cntr_cnt);
	write_size_field(out, in, "mr_iov_limit", attr->mr_iov_limit);
	write_flag_field(out, in, "caps", FlagKind::caps, attr->caps);
	write_flag_field(out, in, "mode", FlagKind::mode, attr->mode);
	write_size_field(out, in, "auth_key_size", attr->auth_key_size);
	write_size_field(out, in, "max_err_data", attr->max_err_data);
	write_size_field(out, in, "mr_cnt", attr->mr_cnt);
	out.append("%stclass: 0x%x\n", in, attr->tclass);
}

void write_fabric_attr(TextSink &out, const char *indent, const fi_fabric_attr *attr)
{
	if (!attr)
		return write_missing(out, indent, "fi_fabric_attr");
	const char *in = deeper(indent);
	out.append("%sfi_fabric_attr:\n", indent);
	out.append("%sname: %s\n", in, attr->name ? attr->name : "(null)");
	out.append("%sprov_name: %s\n", in, attr->prov_name ? attr->prov_name : "(null)");
	write_version_field(out, in, "prov_version", attr->prov_version);
	write_version_field(out, in, "api_version", attr->api_version);
}

void write_fid(TextSink &out, const fid *object)
{
	// The object appends its own text in the space that is left; one that declines
	// (an -FI_ENOSYS entry) gets the generic line instead of nothing.
	if (can_describe_itself(object)) {
		size_t used = strnlen(out.data(), out.capacity());
		if (object->ops->tostr(object, out.data() + used, out.capacity() - used) >= 0)
			return;
		if (used < out.capacity())
			out.data()[used] = '\0';
	}
	out.append("fid: %p\n", static_cast<const void *>(object));
}

void write_info(TextSink &out, const fi_info *info)
{
	const char *in = one_level;
	out.append("fi_info:\n");
	write_flag_field(out, in, "caps", FlagKind::caps, info->caps);
	write_flag_field(out, in, "mode", FlagKind::mode, info->mode);
	write_enum_field(out, in, "addr_format", EnumKind::addr_format, info->addr_format);
	write_size_field(out, in, "src_addrlen", info->src_addrlen);
	write_size_field(out, in, "dest_addrlen", info->dest_addrlen);
	write_address_field(out, "src_addr", info->addr_format, info->src_addr);
	write_address_field(out, "dest_addr", info->addr_format, info->dest_addr);
	if (can_describe_itself(info->handle))
		write_fid(out, info->handle);
	else
		out.append("%shandle: %p\n", in, static_cast<const void *>(info->handle));
	write_tx_attr(out, in, info->tx_attr);
	write_rx_attr(out, in, info->rx_attr);
	write_ep_attr(out, in, info->ep_attr);
	write_domain_attr(out, in, info->domain_attr);
	write_fabric_attr(out, in, info->fabric_attr);
	if (info->nic && can_describe_itself(&info->nic->fid))
		write_fid(out, &info->nic->fid);
	else
		out.append("%snic: %p\n", in, static_cast<const void *>(info->nic));
}

} // namespace ofi::tostr
