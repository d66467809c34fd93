// Provider name rules: layered names ("tcp;ofi_rxm"), hint names and the FI_PROVIDER filter.
#ifndef OFI_SRC_PROVIDER_NAMES_H
#define OFI_SRC_PROVIDER_NAMES_H

#include <string>
#include <vector>

namespace ofi::core {

// "tcp;ofi_rxm" -> {"tcp", "ofi_rxm"}; empty components are dropped.
std::vector<std::string> split_provider_name(const std::string &name);

// hints->fabric_attr->prov_name against an info's provider name. A single name matches any
// info that has it as a component (so "tcp" also selects "tcp;ofi_rxm" and "ofi_rxm" all
// its layerings); a layered hint must name the same components in any order. "^a,b" matches
// every info that uses neither a nor b (how a utility provider keeps itself out of the core
// query it makes).
bool hint_name_matches(const std::string &hint, const std::string &info_name);

// The FI_PROVIDER environment variable: a comma separated list of (possibly layered) names;
// a leading '^' turns it into an exclude list.
class ProviderFilter {
public:
	static ProviderFilter from_environment();
	explicit ProviderFilter(const char *spec);

	// Top-level results: an include entry "tcp" keeps only the plain tcp infos, "ofi_rxm" keeps
	// every layering of rxm and "tcp;ofi_rxm" exactly that. An exclude entry drops every info
	// that uses the named provider.
	bool allows_info(const std::string &info_name) const;

	// Whether a provider may be asked at all. Only exclusion applies here, because a utility
	// provider must still reach its core provider when the include list names only the layering.
	bool allows_provider(const std::string &provider_name) const;

	bool empty() const { return entries_.empty(); }
	bool excludes() const { return exclude_; }

private:
	bool exclude_ = false;
	std::vector<std::string> entries_;
};

} // namespace ofi::core

#endif
