// Name matching rules for providers; see provider_names.h for the semantics.
#include "src/provider_names.h"

#include <algorithm>
#include <cstdlib>

namespace ofi::core {

namespace {

std::vector<std::string> split(const std::string &text, char separator)
{
	std::vector<std::string> parts;
	size_t start = 0;
	while (start <= text.size()) {
		size_t end = text.find(separator, start);
		if (end == std::string::npos)
			end = text.size();
		std::string part = text.substr(start, end - start);
		// Tolerate spaces around list items ("tcp, verbs").
		part.erase(0, part.find_first_not_of(" \t"));
		part.erase(part.find_last_not_of(" \t") + 1);
		if (!part.empty())
			parts.push_back(part);
		start = end + 1;
	}
	return parts;
}

bool contains(const std::vector<std::string> &names, const std::string &name)
{
	return std::find(names.begin(), names.end(), name) != names.end();
}

bool same_components(std::vector<std::string> a, std::vector<std::string> b)
{
	std::sort(a.begin(), a.end());
	std::sort(b.begin(), b.end());
	return a == b;
}

} // namespace

std::vector<std::string> split_provider_name(const std::string &name)
{
	return split(name, ';');
}

bool hint_name_matches(const std::string &hint, const std::string &info_name)
{
	std::vector<std::string> offered = split_provider_name(info_name);
	if (!hint.empty() && hint[0] == '^') {
		for (const std::string &excluded : split(hint.substr(1), ','))
			if (contains(offered, excluded))
				return false;
		return true;
	}
	std::vector<std::string> wanted = split_provider_name(hint);
	if (wanted.empty())
		return true;
	if (wanted.size() == 1)
		return contains(offered, wanted.front());
	return same_components(wanted, offered);
}

ProviderFilter ProviderFilter::from_environment()
{
	return ProviderFilter(std::getenv("FI_PROVIDER"));
}

ProviderFilter::ProviderFilter(const char *spec)
{
	if (!spec)
		return;
	std::string text(spec);
	size_t first = text.find_first_not_of(" \t");
	if (first != std::string::npos && text[first] == '^') {
		exclude_ = true;
		text.erase(0, first + 1);
	}
	entries_ = split(text, ',');
}

bool ProviderFilter::allows_info(const std::string &info_name) const
{
	if (entries_.empty())
		return true;
	std::vector<std::string> components = split_provider_name(info_name);
	for (const std::string &entry : entries_) {
		// A single name is a component: "tcp" keeps tcp and the layerings on it (1.17:
		// FI_PROVIDER=tcp with FI_EP_RDM gives tcp;ofi_rxm), "ofi_rxm" keeps every rxm
		// layering; a layered name keeps exactly that layering.
		std::vector<std::string> named = split_provider_name(entry);
		bool hit = named.size() > 1 ? same_components(named, components)
					    : contains(components, entry);
		if (hit)
			return !exclude_;
	}
	return exclude_;
}

bool ProviderFilter::allows_provider(const std::string &provider_name) const
{
	if (!exclude_)
		return true;
	return !contains(entries_, provider_name);
}

} // namespace ofi::core
