// The core's list of providers, filled once from the built-in providers (registry.h).
// Everything in src/ that needs "which providers exist" goes through here.
#ifndef OFI_SRC_PROVIDER_REGISTRY_H
#define OFI_SRC_PROVIDER_REGISTRY_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>

#include <vector>

namespace ofi::core {

// Providers in preference order: RDMA cores, then socket cores, then utility providers.
// Safe to call from inside a provider's getinfo (recursive fi_getinfo by utility providers).
std::vector<fi_provider *> registered_providers();

// A utility provider layers over a core one; libfabric names them "ofi_<name>".
bool is_utility_provider_name(const char *name);

fi_provider *find_provider(const char *name);

// Test hooks: unit tests replace the built-in providers with fakes.
void registry_replace_for_test(const std::vector<fi_provider *> &providers);
void registry_restore_for_test();

} // namespace ofi::core

#endif
