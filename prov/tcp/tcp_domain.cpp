#include "prov/tcp/tcp_domain.h"

#include "prov/tcp/tcp_endpoint.h"
#include "prov/tcp/tcp_info.h"
#include "prov/tcp/tcp_srx.h"
#include "prov/util/error.h"

namespace tcp {

TcpDomain::TcpDomain(TcpFabric &fabric, const struct fi_info *info, void *context)
    : util::Domain(fabric, info, context)
{
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
