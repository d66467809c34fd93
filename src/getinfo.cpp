// fi_getinfo: asks the registered providers, filters their answers by the hints and by
// FI_PROVIDER, and narrows what is left to what the application asked for.
#include "src/info_alloc.h"
#include "src/info_matcher.h"
#include "src/log.h"
#include "src/provider_names.h"
#include "src/provider_registry.h"

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>

#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

namespace ofi::core {
namespace {

constexpr uint64_t getinfo_flags = FI_SOURCE | FI_NUMERICHOST | FI_PROV_ATTR_ONLY;

// Depth of fi_getinfo calls on this thread: utility providers query their core provider
// through the public fi_getinfo, and such inner queries must not be filtered by FI_PROVIDER's
// include list (FI_PROVIDER=ofi_rxm still needs tcp underneath).
thread_local int getinfo_depth = 0;

struct DepthGuard {
	DepthGuard() { ++getinfo_depth; }
	~DepthGuard() { --getinfo_depth; }
};

// Providers whose getinfo is running on this thread. A utility provider's inner query must
// not come back to itself (it would layer over itself forever).
thread_local std::vector<const fi_provider *> active_providers;

struct ActiveGuard {
	explicit ActiveGuard(const fi_provider *prov) { active_providers.push_back(prov); }
	~ActiveGuard() { active_providers.pop_back(); }
};

bool is_active(const fi_provider *prov)
{
	for (const fi_provider *active : active_providers)
		if (active == prov)
			return true;
	return false;
}

// Appends to a singly linked list while keeping order.
class InfoList {
public:
	~InfoList() { fi_freeinfo(head_); }
	void append(fi_info *info)
	{
		*tail_ = info;
		while (info->next)
			info = info->next;
		tail_ = &info->next;
	}
	fi_info *release()
	{
		fi_info *head = head_;
		head_ = nullptr;
		tail_ = &head_;
		return head;
	}
	bool empty() const { return head_ == nullptr; }

private:
	fi_info *head_ = nullptr;
	fi_info **tail_ = &head_;
};

const char *hint_prov_name(const fi_info *hints)
{
	return hints && hints->fabric_attr ? hints->fabric_attr->prov_name : nullptr;
}

// Whether a provider can produce anything the hint's provider name would accept; this avoids
// pointless (and for utility providers, recursive) queries.
bool provider_may_match(const fi_provider *prov, const char *hint_name)
{
	if (!hint_name || !*hint_name)
		return true;
	if (hint_name[0] == '^')
		return hint_name_matches(hint_name, prov->name);
	std::vector<std::string> wanted = split_provider_name(hint_name);
	for (const std::string &name : wanted)
		if (name == prov->name)
			return true;
	// "tcp" alone also asks for tcp's layerings under every utility provider.
	return is_utility_provider_name(prov->name) && wanted.size() == 1 &&
	       !is_utility_provider_name(wanted.front().c_str());
}

// Fills in what providers may leave out and the core owns (provider name and version).
bool complete_provider_fields(fi_info *info, const fi_provider *prov)
{
	if (!info->fabric_attr)
		return false;
	if (!info->fabric_attr->prov_name) {
		info->fabric_attr->prov_name = strdup(prov->name);
		if (!info->fabric_attr->prov_name)
			return false;
	}
	if (!info->fabric_attr->prov_version)
		info->fabric_attr->prov_version = prov->version;
	return true;
}

// Keeps the infos of one provider's answer that pass the hints and the FI_PROVIDER filter.
void keep_matching(fi_info *answer, const fi_provider *prov, uint32_t version,
		   const fi_info *hints, const ProviderFilter &filter, InfoList &out)
{
	while (answer) {
		fi_info *info = answer;
		answer = answer->next;
		info->next = nullptr;
		bool keep = complete_provider_fields(info, prov);
		const char *name = keep ? info->fabric_attr->prov_name : "";
		const char *hint_name = hint_prov_name(hints);
		keep = keep && (!hint_name || hint_name_matches(hint_name, name)) &&
		       filter.allows_info(name) && info_matches_hints(version, info, hints);
		if (keep) {
			narrow_info_to_hints(version, info, hints);
			out.append(info);
		} else {
			free_one_info(info);
		}
	}
}

int query_provider(fi_provider *prov, uint32_t version, const char *node, const char *service,
		   uint64_t flags, const fi_info *hints, const ProviderFilter &filter,
		   InfoList &out)
{
	if (!prov->getinfo)
		return -FI_ENODATA;
	fi_info *answer = nullptr;
	ActiveGuard active(prov);
	int ret = prov->getinfo(version, node, service, flags, hints, &answer);
	if (ret) {
		fi_freeinfo(answer);
		FI_INFO(&core_log_provider, FI_LOG_CORE, "provider %s: getinfo returned %d\n", prov->name,
			ret);
		return ret;
	}
	keep_matching(answer, prov, version, hints, filter, out);
	return 0;
}

// FI_PROV_ATTR_ONLY: one info per registered provider naming it, usable or not.
int list_providers(uint32_t version, const fi_info *hints, const ProviderFilter &filter,
		   InfoList &out)
{
	const char *hint_name = hint_prov_name(hints);
	for (fi_provider *prov : registered_providers()) {
		if (hint_name && !hint_name_matches(hint_name, prov->name))
			continue;
		if (!filter.allows_provider(prov->name) ||
		    (!is_utility_provider_name(prov->name) && !filter.allows_info(prov->name)))
			continue;
		fi_info *info = fi_dupinfo(nullptr);
		if (!info)
			return -FI_ENOMEM;
		out.append(info);
		info->fabric_attr->prov_name = strdup(prov->name);
		if (!info->fabric_attr->prov_name)
			return -FI_ENOMEM;
		info->fabric_attr->prov_version = prov->version;
		info->fabric_attr->api_version = version;
	}
	return 0;
}

// An enum field as the integer the application stored. C code may store any int in these
// fields; in C++ loading a value outside the enum's range as the enum type is undefined.
template <typename Enum> int enum_value(const Enum &field)
{
	static_assert(sizeof(Enum) == sizeof(int));
	int value;
	std::memcpy(&value, &field, sizeof(value));
	return value;
}

// Whether every enum in the hints is one the 1.17 API defines. No provider can match an
// unknown endpoint type, threading model, progress model, resource management or AV type,
// and checking here keeps out-of-range enum values away from every provider (found by
// test/fuzz/fuzz_getinfo).
bool hint_enums_known(const fi_info *hints)
{
	auto in = [](int value, int last) { return value >= 0 && value <= last; };
	if (hints->ep_attr && !in(enum_value(hints->ep_attr->type), FI_EP_SOCK_DGRAM))
		return false;
	const fi_domain_attr *d = hints->domain_attr;
	return !d || (in(enum_value(d->threading), FI_THREAD_ENDPOINT) &&
		      in(enum_value(d->control_progress), FI_PROGRESS_MANUAL) &&
		      in(enum_value(d->data_progress), FI_PROGRESS_MANUAL) &&
		      in(enum_value(d->resource_mgmt), FI_RM_ENABLED) &&
		      in(enum_value(d->av_type), FI_AV_TABLE));
}

int getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
	    const fi_info *hints, fi_info **info)
{
	if (!info)
		return -FI_EINVAL;
	*info = nullptr;
	if (FI_MAJOR(version) != FI_MAJOR_VERSION || FI_MINOR(version) > FI_MINOR_VERSION) {
		FI_WARN(&core_log_provider, FI_LOG_CORE,
			"API version %u.%u is not supported (this library implements %d.%d)\n",
			FI_MAJOR(version), FI_MINOR(version), FI_MAJOR_VERSION, FI_MINOR_VERSION);
		return -FI_ENOSYS;
	}
	if (flags & ~getinfo_flags)
		return -FI_EBADFLAGS;
	if (hints && !hint_enums_known(hints)) {
		FI_INFO(&core_log_provider, FI_LOG_CORE, "hints hold an undefined enum value\n");
		return -FI_ENODATA;
	}

	DepthGuard depth;
	const bool top_level = getinfo_depth == 1;
	ProviderFilter env_filter = ProviderFilter::from_environment();
	// Nested queries (a utility provider asking for its core) keep FI_PROVIDER's exclusions
	// but not its include list.
	ProviderFilter filter = top_level || env_filter.excludes() ? env_filter
								   : ProviderFilter(nullptr);

	InfoList results;
	if (flags & FI_PROV_ATTR_ONLY) {
		int ret = list_providers(version, hints, filter, results);
		if (ret)
			return ret;
	} else {
		// Layered (utility) results first, as libfabric lists them, then the core ones.
		std::vector<fi_provider *> providers = registered_providers();
		for (bool utility_pass : {true, false}) {
			for (fi_provider *prov : providers) {
				if (is_utility_provider_name(prov->name) != utility_pass)
					continue;
				if (is_active(prov) || !env_filter.allows_provider(prov->name) ||
				    !provider_may_match(prov, hint_prov_name(hints)))
					continue;
				query_provider(prov, version, node, service, flags, hints, filter,
					       results);
			}
		}
	}
	if (results.empty())
		return -FI_ENODATA;
	*info = results.release();
	return 0;
}

} // namespace
} // namespace ofi::core

extern "C" int fi_getinfo(uint32_t version, const char *node, const char *service,
			  uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
	try {
		return ofi::core::getinfo(version, node, service, flags, hints, info);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

// The current fi_getinfo is the default version; older ABIs have their own in compat.cpp.
__asm__(".symver fi_getinfo, fi_getinfo@@@FABRIC_1.3");
