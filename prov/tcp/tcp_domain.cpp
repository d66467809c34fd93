#include "prov/tcp/tcp_domain.h"

#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_endpoint.h"
#include "prov/tcp/tcp_info.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/tcp/tcp_srx.h"
#include "prov/util/error.h"
#include "prov/util/framed_send_ops.h"
#include "prov/util/quiet_ops.h"
#include "prov/util/rx_hold_ops.h"
#include "prov/util/rx_inplace_ops.h"
#include "prov/util/send_hold_ops.h"
#include "prov/util/rx_place_ops.h"

#include <cstring>

namespace tcp {

namespace {

int hold_endpoint(struct fid_ep *ep, bool held) noexcept
{
	auto *e = util::fid_cast<TcpEndpoint>(ep ? &ep->fid : nullptr, FI_CLASS_EP);
	return e ? e->hold_rx(held) : -FI_EINVAL;
}

struct ofi_rx_hold_ops rx_hold_ops = {
	sizeof(struct ofi_rx_hold_ops),
	[](struct fid_ep *ep) noexcept { return hold_endpoint(ep, true); },
	[](struct fid_ep *ep) noexcept { return hold_endpoint(ep, false); },
};

struct ofi_quiet_ops quiet_ops = {
	sizeof(struct ofi_quiet_ops),
	[](struct fid_ep *ep, int quiet) noexcept {
		auto *e = util::fid_cast<TcpEndpoint>(ep ? &ep->fid : nullptr, FI_CLASS_EP);
		return e ? e->set_quiet(quiet != 0) : -FI_EINVAL;
	},
};

struct ofi_send_hold_ops send_hold_ops = {
	sizeof(struct ofi_send_hold_ops),
	[](struct fid_domain *domain) noexcept {
		auto *d = util::fid_cast<TcpDomain>(domain ? &domain->fid : nullptr,
						    FI_CLASS_DOMAIN);
		if (!d)
			return -FI_EINVAL;
		d->hold_only_more();
		return 0;
	},
};

struct ofi_rx_place_ops rx_place_ops = {
	sizeof(struct ofi_rx_place_ops),
	[](struct fid_ep *srx, size_t head_len, ofi_rx_place_fn place, void *arg) noexcept {
		auto *s = util::fid_cast<TcpSrx>(srx ? &srx->fid : nullptr, FI_CLASS_SRX_CTX);
		return s ? s->set_placer(head_len, place, arg) : -FI_EINVAL;
	},
};

struct ofi_rx_inplace_ops rx_inplace_ops = {
	sizeof(struct ofi_rx_inplace_ops),
	[](struct fid_ep *ep, ofi_rx_inplace_fn consume, void *arg) noexcept {
		auto *e = util::fid_cast<TcpEndpoint>(ep ? &ep->fid : nullptr, FI_CLASS_EP);
		return e ? e->set_consumer(consume, arg) : -FI_EINVAL;
	},
};

// (fid_cast_exact: no RTTI walk on the data path)
struct ofi_framed_send_ops framed_send_ops = {
	sizeof(struct ofi_framed_send_ops),
	[](struct fid_ep *ep, const void *hdr, size_t hdr_len, const struct iovec *payload,
	   size_t count, size_t payload_len) noexcept -> ssize_t {
		auto *e = util::fid_cast_exact<TcpEndpoint>(ep ? &ep->fid : nullptr);
		return e ? e->inject_framed(hdr, hdr_len, payload, count, payload_len)
			 : -FI_EINVAL;
	},
};

} // namespace

TcpDomain::TcpDomain(TcpFabric &fabric, const struct fi_info *info, void *context)
    : util::Domain(fabric, info, context), send_flush_(engine()),
      stall_watch_(engine(), rx_stall_timeout_ms()),
      coalesce_sends_(settings().coalesce_sends && !auto_progress())
{
	const fi_domain_attr *attr = info->domain_attr;
	if (attr->auth_key_size > kMaxAuthKey || (attr->auth_key_size && !attr->auth_key))
		throw util::Error(-FI_EINVAL);
	auth_key_.assign(attr->auth_key, attr->auth_key + attr->auth_key_size);
	install_ops<TcpDomain>();
}

int TcpDomain::endpoint(struct fi_info *info, struct fid_ep **ep, void *context)
{
	if (!info || !ep)
		return -FI_EINVAL;
	// The application may have stored any value there: compare it as an integer.
	if (info->ep_attr && util::raw_enum(info->ep_attr->type) != FI_EP_MSG &&
	    util::raw_enum(info->ep_attr->type) != FI_EP_UNSPEC)
		return -FI_EINVAL;
	auto *e = new TcpEndpoint(*this, info, context);
	*ep = e->ep_fid();
	return 0;
}

int TcpDomain::srx_context(struct fi_rx_attr *attr, struct fid_ep **rx_ep, void *context)
{
	if (!rx_ep)
		return -FI_EINVAL;
	// Applications pass their info's rx_attr (RMA bits included: they concern the endpoint,
	// not its receives); only what tcp cannot receive at all (tagged, atomics...) is refused.
	if (attr && (attr->caps & ~(kRxCaps | FI_MSG | FI_RECV)))
		return -FI_EOPNOTSUPP;
	auto *srx = new TcpSrx(*this, attr, context);
	*rx_ep = srx->ep_fid();
	return 0;
}

int TcpDomain::ops_open(const char *name, uint64_t flags, void **ops, void *)
{
	if (!name || !ops)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (std::strcmp(name, OFI_RX_HOLD_OPS_NAME) == 0)
		*ops = &rx_hold_ops;
	else if (std::strcmp(name, OFI_QUIET_OPS_NAME) == 0)
		*ops = &quiet_ops;
	else if (std::strcmp(name, OFI_SEND_HOLD_OPS_NAME) == 0)
		*ops = &send_hold_ops;
	else if (std::strcmp(name, OFI_RX_PLACE_OPS_NAME) == 0)
		*ops = &rx_place_ops;
	else if (std::strcmp(name, OFI_RX_INPLACE_OPS_NAME) == 0)
		*ops = &rx_inplace_ops;
	else if (std::strcmp(name, OFI_FRAMED_SEND_OPS_NAME) == 0)
		*ops = &framed_send_ops;
	else
		return -FI_ENOSYS;
	return 0;
}

int TcpDomain::remote_access(uint64_t requester, uint64_t key, uint64_t offset, uint64_t len,
			     uint64_t access, uint8_t **addr, uint64_t *serial)
{
	void *target = nullptr;
	int ret = mr_map().lookup(key, offset, len, access, &target, requester, serial);
	if (ret == 0)
		*addr = static_cast<uint8_t *>(target);
	return ret;
}

} // namespace tcp
