#include "prov/shm/shm_fabric.h"

#include "prov/shm/shm_domain.h"
#include "prov/shm/shm_passive_endpoint.h"
#include "prov/shm/shm_provider.h"
#include "prov/util/error.h"

#include <cstring>
#include <memory>
#include <new>

namespace shm {

ShmFabric::ShmFabric(const struct fi_fabric_attr *attr, void *context)
    : util::Fabric(&shm::provider, attr, context)
{
	install_ops<ShmFabric>();
}
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<ShmFabric>().domain);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<ShmFabric>().passive_ep);

int ShmFabric::domain(struct fi_info *info, struct fid_domain **domain, void *context)
{
	if (!info || !domain || !info->domain_attr)
		return -FI_EINVAL;
	if (info->ep_attr && util::raw_enum(info->ep_attr->type) != FI_EP_MSG &&
	    util::raw_enum(info->ep_attr->type) != FI_EP_UNSPEC)
		return -FI_EINVAL;
	auto d = std::make_unique<ShmDomain>(*this, info, context);
	*domain = d.release()->domain_fid();
	return 0;
}

int ShmFabric::passive_ep(struct fi_info *info, struct fid_pep **pep, void *context)
{
	if (!info || !pep)
		return -FI_EINVAL;
	auto p = std::make_unique<ShmPassiveEndpoint>(*this, info, context);
	*pep = p.release()->pep_fid();
	return 0;
}

int open_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context) noexcept
{
	if (!attr || !fabric)
		return -FI_EINVAL;
	if (attr->prov_name && strcmp(attr->prov_name, shm::provider.name) != 0)
		return -FI_EINVAL;
	try {
		auto f = std::make_unique<ShmFabric>(attr, context);
		*fabric = f.release()->fabric_fid();
		return 0;
	} catch (const util::Error &e) {
		return e.code();
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

} // namespace shm
