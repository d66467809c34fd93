#include "prov/shm/shm_domain.h"

#include "prov/shm/shm_endpoint.h"
#include "prov/util/error.h"

#include <memory>

namespace shm {

ShmDomain::ShmDomain(ShmFabric &fabric, const struct fi_info *info, void *context)
    : util::Domain(fabric, info, context)
{
	if (info->domain_attr->auth_key_size)
		throw util::Error(-FI_EINVAL); // not implemented: refuse rather than ignore
	install_ops<ShmDomain>();
}
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<ShmDomain>().endpoint);

int ShmDomain::endpoint(struct fi_info *info, struct fid_ep **ep, void *context)
{
	if (!info || !ep)
		return -FI_EINVAL;
	if (info->ep_attr && util::raw_enum(info->ep_attr->type) != FI_EP_MSG &&
	    util::raw_enum(info->ep_attr->type) != FI_EP_UNSPEC)
		return -FI_EINVAL;
	auto e = std::make_unique<ShmEndpoint>(*this, info, context);
	*ep = e.release()->ep_fid();
	return 0;
}

} // namespace shm
