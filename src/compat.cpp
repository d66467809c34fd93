// Entry points for binaries linked against older libfabric ABIs (symbol versions FABRIC_1.0
// to FABRIC_1.2). Old callers hand in their smaller structs, which are widened into current
// ones before the real call. What goes back out is always the current layout: it begins with
// the old layout, so an old binary reads it correctly, and fi_freeinfo frees it in any version.
#include "src/compat_layouts.h"
#include "src/info_alloc.h"

#include <rdma/fabric.h>

#include <cstdlib>
#include <cstring>

namespace ofi::core {
namespace {

template <typename Old, typename New>
bool widen_attr(const Old *old, New **out)
{
	static_assert(sizeof(Old) <= sizeof(New));
	*out = nullptr;
	if (!old)
		return true;
	*out = static_cast<New *>(std::calloc(1, sizeof(New)));
	if (*out)
		std::memcpy(*out, old, sizeof(Old));
	return *out != nullptr;
}

// A current-layout shallow view of an ABI 1.0 info: the attributes are widened copies (new
// fields zero) whose pointers still belong to the caller, so they are released with
// release_view(), never with fi_freeinfo. fi_dupinfo() of the view gives an owned copy.
struct InfoView {
	fi_info info{};

	bool build(const abi_1_0::fi_info *old)
	{
		std::memcpy(&info, old, sizeof(*old));
		info.next = nullptr;
		info.tx_attr = nullptr;
		info.rx_attr = nullptr;
		info.ep_attr = nullptr;
		info.domain_attr = nullptr;
		info.fabric_attr = nullptr;
		bool ok = widen_attr(old->tx_attr, &info.tx_attr) &&
			  widen_attr<::fi_rx_attr, ::fi_rx_attr>(old->rx_attr, &info.rx_attr) &&
			  widen_attr(old->ep_attr, &info.ep_attr) &&
			  widen_attr(old->domain_attr, &info.domain_attr) &&
			  widen_attr(old->fabric_attr, &info.fabric_attr);
		// api_version sits where the old struct had tail padding: whatever was there is
		// not a version.
		if (ok && info.fabric_attr)
			info.fabric_attr->api_version = 0;
		return ok;
	}

	~InfoView()
	{
		std::free(info.tx_attr);
		std::free(info.rx_attr);
		std::free(info.ep_attr);
		std::free(info.domain_attr);
		std::free(info.fabric_attr);
	}
};

fi_info *dupinfo_1_0(const abi_1_0::fi_info *old)
{
	if (!old)
		return fi_dupinfo(nullptr);
	InfoView view;
	if (!view.build(old))
		return nullptr;
	return fi_dupinfo(&view.info);
}

// ABI 1.1 infos have current attributes but end before 'nic'.
fi_info *dupinfo_1_1(const fi_info *old)
{
	if (!old)
		return fi_dupinfo(nullptr);
	fi_info wide{};
	std::memcpy(&wide, old, abi_1_1::fi_info_size);
	wide.next = nullptr;
	return fi_dupinfo(&wide);
}

// Runs fi_getinfo with hints converted by 'convert' (owned copies, freed afterwards).
template <typename OldInfo, typename Convert>
int getinfo_with_old_hints(uint32_t version, const char *node, const char *service,
			   uint64_t flags, const OldInfo *hints, fi_info **info, Convert convert)
{
	fi_info *wide_hints = nullptr;
	if (hints) {
		wide_hints = convert(hints);
		if (!wide_hints)
			return -FI_ENOMEM;
	}
	int ret = fi_getinfo(version, node, service, flags, wide_hints, info);
	fi_freeinfo(wide_hints);
	return ret;
}

} // namespace
} // namespace ofi::core

using namespace ofi::core;

extern "C" {

// ---- FABRIC_1.0 ----

__attribute__((symver("fi_dupinfo@FABRIC_1.0"))) struct fi_info *
fi_dupinfo_v1_0(const abi_1_0::fi_info *info)
{
	return dupinfo_1_0(info);
}

__attribute__((symver("fi_freeinfo@FABRIC_1.0"))) void fi_freeinfo_v1_0(struct fi_info *info)
{
	fi_freeinfo(info);
}

__attribute__((symver("fi_getinfo@FABRIC_1.0"))) int
fi_getinfo_v1_0(uint32_t version, const char *node, const char *service, uint64_t flags,
		const abi_1_0::fi_info *hints, struct fi_info **info)
{
	return getinfo_with_old_hints(version, node, service, flags, hints, info, dupinfo_1_0);
}

// The 1.0 fabric attribute has no api_version: the caller speaks API 1.0.
__attribute__((symver("fi_fabric@FABRIC_1.0"))) int
fi_fabric_v1_0(const abi_1_0::fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (!attr)
		return -FI_EINVAL;
	fi_fabric_attr wide{};
	std::memcpy(&wide, attr, offsetof(fi_fabric_attr, api_version));
	wide.api_version = FI_VERSION(1, 0);
	return fi_fabric(&wide, fabric, context);
}

// ---- FABRIC_1.1 ----

__attribute__((symver("fi_dupinfo@FABRIC_1.1"))) struct fi_info *
fi_dupinfo_v1_1(const struct fi_info *info)
{
	return dupinfo_1_1(info);
}

__attribute__((symver("fi_freeinfo@FABRIC_1.1"))) void fi_freeinfo_v1_1(struct fi_info *info)
{
	fi_freeinfo(info);
}

__attribute__((symver("fi_getinfo@FABRIC_1.1"))) int
fi_getinfo_v1_1(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info)
{
	return getinfo_with_old_hints(version, node, service, flags, hints, info, dupinfo_1_1);
}

// ---- FABRIC_1.2: fi_info already had its current size ----

__attribute__((symver("fi_dupinfo@FABRIC_1.2"))) struct fi_info *
fi_dupinfo_v1_2(const struct fi_info *info)
{
	return fi_dupinfo(info);
}

__attribute__((symver("fi_freeinfo@FABRIC_1.2"))) void fi_freeinfo_v1_2(struct fi_info *info)
{
	fi_freeinfo(info);
}

__attribute__((symver("fi_getinfo@FABRIC_1.2"))) int
fi_getinfo_v1_2(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info)
{
	return fi_getinfo(version, node, service, flags, hints, info);
}

} // extern "C"
