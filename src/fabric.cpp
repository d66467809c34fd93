// fi_fabric, fi_version and fi_open: the entry points that are not about discovery.
#include "src/log.h"
#include "src/provider_names.h"
#include "src/provider_registry.h"

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>

#include <new>
#include <string>

namespace ofi::core {
namespace {

// The provider that owns a fabric named "tcp" or "tcp;ofi_rxm": for a layered name the
// utility provider on top, which opens its core provider's fabric itself.
fi_provider *fabric_owner(const char *prov_name)
{
	std::vector<std::string> components = split_provider_name(prov_name);
	if (components.empty())
		return nullptr;
	if (components.size() == 1)
		return find_provider(components.front().c_str());
	for (const std::string &name : components)
		if (is_utility_provider_name(name.c_str()))
			return find_provider(name.c_str());
	return nullptr;
}

int open_fabric(fi_fabric_attr *attr, fid_fabric **fabric, void *context)
{
	if (!attr || !fabric || !attr->prov_name)
		return -FI_EINVAL;
	fi_provider *prov = fabric_owner(attr->prov_name);
	if (!prov || !prov->fabric) {
		FI_WARN(&core_log_provider, FI_LOG_CORE, "no provider named \"%s\"\n",
			attr->prov_name);
		return -FI_ENODEV;
	}
	int ret = prov->fabric(attr, fabric, context);
	// The API version decides version-dependent behaviour in the provider's objects.
	if (!ret && *fabric && !(*fabric)->api_version)
		(*fabric)->api_version = attr->api_version ? attr->api_version : fi_version();
	return ret;
}

} // namespace
} // namespace ofi::core

extern "C" {

uint32_t fi_version(void)
{
	return FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION);
}

int fi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	try {
		return ofi::core::open_fabric(attr, fabric, context);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

// No named library objects ("mr_cache", "logging") are offered yet.
int fi_open(uint32_t version, const char *name, void *attr, size_t attr_len, uint64_t flags,
	    struct fid **fid, void *context)
{
	(void)version;
	(void)attr;
	(void)attr_len;
	(void)flags;
	(void)context;
	if (!name || !fid)
		return -FI_EINVAL;
	*fid = nullptr;
	return -FI_ENOSYS;
}

} // extern "C"

// fi_fabric's attribute gained api_version in ABI 1.1; compat.cpp has the 1.0 entry point.
__asm__(".symver fi_fabric, fi_fabric@@@FABRIC_1.1");
