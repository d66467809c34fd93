// Hint matching for fi_getinfo; see info_matcher.h.
#include "src/info_matcher.h"

#include <cstring>

namespace ofi::core {

namespace {

// A provider that lists no modifiers offers all of them (man fi_getinfo: "all relevant
// modifiers are assumed").
uint64_t effective_caps(uint64_t offered)
{
	if (!(offered & primary_modifiers))
		offered |= primary_modifiers;
	return offered;
}

bool caps_offered(uint64_t offered, uint64_t wanted)
{
	return (wanted & ~effective_caps(offered)) == 0;
}

bool within(size_t wanted, size_t offered)
{
	return wanted <= offered;
}

bool bits_within(uint64_t wanted, uint64_t offered)
{
	return (wanted & ~offered) == 0;
}

// The application's mode bits for an attribute: its own if set, else the info-level ones.
uint64_t accepted_mode(uint64_t attr_mode, const fi_info *hints)
{
	return attr_mode ? attr_mode : hints->mode;
}

// The mr_mode bits an application accepts, translated to the bit form of API 1.5+.
// Legacy values: FI_MR_BASIC is a fixed bit set, FI_MR_SCALABLE none, and FI_MR_UNSPEC under
// API < 1.5 means "either of them".
int accepted_mr_bits(uint32_t version, const fi_info *hints, bool *legacy_any)
{
	int mode = hints->domain_attr ? hints->domain_attr->mr_mode : 0;
	*legacy_any = false;
	int local = (hints->mode & FI_LOCAL_MR) ? FI_MR_LOCAL : 0;
	if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		if (mode == FI_MR_BASIC)
			return mr_basic_bits | local;
		if (mode == FI_MR_SCALABLE)
			return local;
		*legacy_any = true;
		return mr_basic_bits | local;
	}
	if (mode & FI_MR_BASIC)
		return (mode & ~(FI_MR_BASIC | FI_MR_SCALABLE)) | mr_basic_bits | local;
	if (mode & FI_MR_SCALABLE)
		return (mode & ~FI_MR_SCALABLE) | local;
	return mode | local;
}

// The mr_mode bits a provider requires; providers speak the 1.5+ bit form, but a legacy
// FI_MR_BASIC value is accepted too.
int required_mr_bits(const fi_domain_attr *attr)
{
	int mode = attr->mr_mode;
	if (mode & FI_MR_BASIC)
		mode = (mode & ~FI_MR_BASIC) | mr_basic_bits;
	return mode & ~FI_MR_SCALABLE;
}

bool mr_mode_matches(uint32_t version, const fi_info *info, const fi_info *hints)
{
	bool legacy_any;
	int accepted = accepted_mr_bits(version, hints, &legacy_any);
	int required = required_mr_bits(info->domain_attr);
	if (legacy_any) {
		// Old API, no preference: fine as long as the needs fit FI_MR_BASIC (+ FI_LOCAL_MR).
		accepted |= FI_MR_LOCAL;
		if (!bits_within(required, accepted))
			return false;
		return !(required & FI_MR_LOCAL) || (hints->mode & FI_LOCAL_MR);
	}
	return bits_within(required, accepted);
}

// How much concurrency a threading model lets the application use: lower values demand
// more from the provider (FI_THREAD_SAFE covers every other model).
int thread_demand(fi_threading model)
{
	switch (model) {
	case FI_THREAD_SAFE:
		return 1;
	case FI_THREAD_FID:
		return 2;
	case FI_THREAD_ENDPOINT:
		return 3;
	case FI_THREAD_COMPLETION:
		return 4;
	case FI_THREAD_DOMAIN:
		return 5;
	default:
		return 6;
	}
}

bool progress_matches(fi_progress wanted, fi_progress offered)
{
	// An auto-progress provider also serves applications that drive progress themselves.
	return wanted == FI_PROGRESS_UNSPEC || wanted == offered || offered == FI_PROGRESS_AUTO;
}

bool domain_matches(uint32_t version, const fi_info *info, const fi_info *hints)
{
	const fi_domain_attr *want = hints->domain_attr;
	const fi_domain_attr *have = info->domain_attr;
	if (!want)
		return true;
	if (!have)
		return false;
	if (want->name && (!have->name || std::strcmp(want->name, have->name) != 0))
		return false;
	if (want->threading != FI_THREAD_UNSPEC && have->threading != FI_THREAD_UNSPEC &&
	    thread_demand(want->threading) < thread_demand(have->threading))
		return false;
	if (!progress_matches(want->control_progress, have->control_progress) ||
	    !progress_matches(want->data_progress, have->data_progress))
		return false;
	if (want->resource_mgmt == FI_RM_ENABLED && have->resource_mgmt == FI_RM_DISABLED)
		return false;
	if (want->av_type != FI_AV_UNSPEC && have->av_type != FI_AV_UNSPEC &&
	    want->av_type != have->av_type)
		return false;
	if (!mr_mode_matches(version, info, hints))
		return false;
	if (!bits_within(have->mode, accepted_mode(want->mode, hints)))
		return false;
	return within(want->mr_key_size, have->mr_key_size) &&
	       within(want->cq_data_size, have->cq_data_size) &&
	       within(want->cq_cnt, have->cq_cnt) && within(want->ep_cnt, have->ep_cnt) &&
	       within(want->tx_ctx_cnt, have->tx_ctx_cnt) &&
	       within(want->rx_ctx_cnt, have->rx_ctx_cnt) &&
	       within(want->max_ep_tx_ctx, have->max_ep_tx_ctx) &&
	       within(want->max_ep_rx_ctx, have->max_ep_rx_ctx) &&
	       within(want->max_ep_stx_ctx, have->max_ep_stx_ctx) &&
	       within(want->max_ep_srx_ctx, have->max_ep_srx_ctx) &&
	       within(want->cntr_cnt, have->cntr_cnt) &&
	       within(want->mr_iov_limit, have->mr_iov_limit) &&
	       within(want->max_err_data, have->max_err_data) &&
	       within(want->mr_cnt, have->mr_cnt) && caps_offered(have->caps, want->caps);
}

// FI_SHARED_CONTEXT asks for shared contexts, not for SIZE_MAX of them: it matches a provider
// whose endpoints can take one (the domain's max_ep_stx_ctx / max_ep_srx_ctx), as in 1.17.
bool ctx_count_matches(size_t wanted, size_t offered, size_t shared_per_ep)
{
	if (wanted == FI_SHARED_CONTEXT)
		return shared_per_ep > 0;
	return within(wanted, offered);
}

bool ep_matches(const fi_info *info, const fi_info *hints)
{
	const fi_ep_attr *want = hints->ep_attr;
	const fi_ep_attr *have = info->ep_attr;
	if (!want)
		return true;
	if (!have)
		return false;
	if (want->type != FI_EP_UNSPEC && want->type != have->type)
		return false;
	if (want->protocol != FI_PROTO_UNSPEC && want->protocol != have->protocol)
		return false;
	if (want->protocol_version && want->protocol_version > have->protocol_version)
		return false;
	size_t shared_tx = info->domain_attr ? info->domain_attr->max_ep_stx_ctx : 0;
	size_t shared_rx = info->domain_attr ? info->domain_attr->max_ep_srx_ctx : 0;
	return within(want->max_msg_size, have->max_msg_size) &&
	       within(want->max_order_raw_size, have->max_order_raw_size) &&
	       within(want->max_order_war_size, have->max_order_war_size) &&
	       within(want->max_order_waw_size, have->max_order_waw_size) &&
	       ctx_count_matches(want->tx_ctx_cnt, have->tx_ctx_cnt, shared_tx) &&
	       ctx_count_matches(want->rx_ctx_cnt, have->rx_ctx_cnt, shared_rx);
}

bool tx_matches(const fi_info *info, const fi_info *hints)
{
	const fi_tx_attr *want = hints->tx_attr;
	const fi_tx_attr *have = info->tx_attr;
	if (!want)
		return true;
	if (!have)
		return false;
	return caps_offered(have->caps, want->caps) &&
	       bits_within(have->mode, accepted_mode(want->mode, hints)) &&
	       bits_within(want->msg_order, have->msg_order) &&
	       bits_within(want->comp_order, have->comp_order) &&
	       within(want->inject_size, have->inject_size) && within(want->size, have->size) &&
	       within(want->iov_limit, have->iov_limit) &&
	       within(want->rma_iov_limit, have->rma_iov_limit);
}

bool rx_matches(const fi_info *info, const fi_info *hints)
{
	const fi_rx_attr *want = hints->rx_attr;
	const fi_rx_attr *have = info->rx_attr;
	if (!want)
		return true;
	if (!have)
		return false;
	return caps_offered(have->caps, want->caps) &&
	       bits_within(have->mode, accepted_mode(want->mode, hints)) &&
	       bits_within(want->msg_order, have->msg_order) &&
	       bits_within(want->comp_order, have->comp_order) &&
	       within(want->total_buffered_recv, have->total_buffered_recv) &&
	       within(want->size, have->size) && within(want->iov_limit, have->iov_limit);
}

bool fabric_matches(const fi_info *info, const fi_info *hints)
{
	const fi_fabric_attr *want = hints->fabric_attr;
	const fi_fabric_attr *have = info->fabric_attr;
	if (!want || !want->name)
		return true;
	return have && have->name && std::strcmp(want->name, have->name) == 0;
}

bool is_sockaddr_family(uint32_t format)
{
	return format == FI_SOCKADDR || format == FI_SOCKADDR_IN || format == FI_SOCKADDR_IN6 ||
	       format == FI_SOCKADDR_IB;
}

// FI_SOCKADDR stands for any struct sockaddr, so it pairs with each specific family.
bool addr_format_matches(uint32_t wanted, uint32_t offered)
{
	if (wanted == FI_FORMAT_UNSPEC || offered == FI_FORMAT_UNSPEC || wanted == offered)
		return true;
	return (wanted == FI_SOCKADDR || offered == FI_SOCKADDR) && is_sockaddr_family(wanted) &&
	       is_sockaddr_family(offered);
}

// The mr_mode value reported back: the bit form, or the legacy enum for API < 1.5. An
// application that asked in the legacy form (FI_MR_BASIC or FI_MR_SCALABLE exactly) hears
// back in it whenever the provider's needs are what that value means, as 1.17 answers.
int reported_mr_mode(uint32_t version, int required, int asked)
{
	if (!FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		if (asked == FI_MR_BASIC && !(required & ~mr_basic_bits))
			return FI_MR_BASIC;
		if (asked == FI_MR_SCALABLE && required == 0)
			return FI_MR_SCALABLE;
		return required;
	}
	return (required & (mr_basic_bits | FI_MR_LOCAL)) ? FI_MR_BASIC : FI_MR_SCALABLE;
}

} // namespace

uint64_t narrow_caps(uint64_t offered, uint64_t wanted)
{
	if (!wanted)
		return offered;
	uint64_t caps = wanted & effective_caps(offered) & ~secondary_caps;
	if (!(wanted & primary_modifiers))
		caps |= offered & primary_modifiers;
	return caps | (offered & secondary_caps);
}

bool info_matches_hints(uint32_t version, const fi_info *info, const fi_info *hints)
{
	if (!hints)
		return true;
	if (!caps_offered(info->caps, hints->caps))
		return false;
	// A provider requirement the application did not accept rules the provider out.
	if (!bits_within(info->mode, hints->mode))
		return false;
	if (!addr_format_matches(hints->addr_format, info->addr_format))
		return false;
	return ep_matches(info, hints) && domain_matches(version, info, hints) &&
	       tx_matches(info, hints) && rx_matches(info, hints) && fabric_matches(info, hints);
}

void narrow_info_to_hints(uint32_t version, fi_info *info, const fi_info *hints)
{
	if (info->fabric_attr)
		info->fabric_attr->api_version = version;
	if (info->domain_attr) {
		int required = required_mr_bits(info->domain_attr);
		int asked = hints && hints->domain_attr ? hints->domain_attr->mr_mode : 0;
		info->domain_attr->mr_mode = reported_mr_mode(version, required, asked);
		if (FI_VERSION_LT(version, FI_VERSION(1, 5)) && (required & FI_MR_LOCAL))
			info->mode |= FI_LOCAL_MR;
	}
	if (!hints)
		return;
	info->caps = narrow_caps(info->caps, hints->caps);
	uint64_t wanted = hints->caps;
	if (info->tx_attr) {
		uint64_t tx_wanted = hints->tx_attr && hints->tx_attr->caps ? hints->tx_attr->caps
									     : wanted;
		info->tx_attr->caps = narrow_caps(info->tx_attr->caps, tx_wanted) & info->caps;
		if (hints->tx_attr && hints->tx_attr->op_flags)
			info->tx_attr->op_flags = hints->tx_attr->op_flags;
	}
	if (info->rx_attr) {
		uint64_t rx_wanted = hints->rx_attr && hints->rx_attr->caps ? hints->rx_attr->caps
									     : wanted;
		info->rx_attr->caps = narrow_caps(info->rx_attr->caps, rx_wanted) & info->caps;
		if (hints->rx_attr && hints->rx_attr->op_flags)
			info->rx_attr->op_flags = hints->rx_attr->op_flags;
	}
	const fi_domain_attr *want = hints->domain_attr;
	fi_domain_attr *have = info->domain_attr;
	if (want && have) {
		if (want->threading != FI_THREAD_UNSPEC)
			have->threading = want->threading;
		if (want->control_progress != FI_PROGRESS_UNSPEC)
			have->control_progress = want->control_progress;
		if (want->data_progress != FI_PROGRESS_UNSPEC)
			have->data_progress = want->data_progress;
		if (want->resource_mgmt != FI_RM_UNSPEC)
			have->resource_mgmt = want->resource_mgmt;
		if (want->av_type != FI_AV_UNSPEC)
			have->av_type = want->av_type;
	}
	if (hints->ep_attr && info->ep_attr && hints->ep_attr->mem_tag_format &&
	    info->ep_attr->mem_tag_format)
		info->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
}

} // namespace ofi::core
