#include "prov/tcp/tcp_fabric.h"

#include "prov/tcp/tcp_domain.h"
#include "prov/tcp/tcp_passive_endpoint.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/util/error.h"

#include <cstring>
#include <new>

namespace tcp {

TcpFabric::TcpFabric(const struct fi_fabric_attr *attr, void *context)
    : util::Fabric(&tcp::provider, attr, context)
{
	install_ops<TcpFabric>();
}

int TcpFabric::domain(struct fi_info *info, struct fid_domain **domain, void *context)
{
	if (!info || !domain || !info->domain_attr)
		return -FI_EINVAL;
	// The application may have stored any value there: compare it as an integer.
	if (info->ep_attr && util::raw_enum(info->ep_attr->type) != FI_EP_MSG &&
	    util::raw_enum(info->ep_attr->type) != FI_EP_UNSPEC)
		return -FI_EINVAL;
	auto *d = new TcpDomain(*this, info, context);
	*domain = d->domain_fid();
	return 0;
}

int TcpFabric::passive_ep(struct fi_info *info, struct fid_pep **pep, void *context)
{
	if (!info || !pep)
		return -FI_EINVAL;
	auto *p = new TcpPassiveEndpoint(*this, info, context);
	*pep = p->pep_fid();
	return 0;
}

int open_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context) noexcept
{
	if (!attr || !fabric)
		return -FI_EINVAL;
	if (attr->prov_name && strcmp(attr->prov_name, tcp::provider.name) != 0)
		return -FI_EINVAL;
	try {
		auto *f = new TcpFabric(attr, context);
		*fabric = f->fabric_fid();
		return 0;
	} catch (const util::Error &e) {
		return e.code();
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

} // namespace tcp
