// Provider registry: asks each built-in provider for its struct fi_provider on first use and
// calls every provider's cleanup() at exit or when the library is unloaded.
#include "config.h"
#include "src/params.h"
#include "src/provider_registry.h"
#include "src/registry.h"

#include <cstdlib>
#include <cstring>
#include <mutex>

// Weak references: the library links (and runs without them) before a provider's code lands.
extern "C" {
__attribute__((weak)) struct fi_provider *ofi_tcp_provider_init(void);
__attribute__((weak)) struct fi_provider *ofi_verbs_provider_init(void);
__attribute__((weak)) struct fi_provider *ofi_rxm_provider_init(void);
__attribute__((weak)) struct fi_provider *ofi_shm_provider_init(void);
}

namespace ofi::core {
namespace {

using ProviderInit = fi_provider *(*)();

struct Registry {
	std::recursive_mutex lock;
	bool loaded = false;
	std::vector<fi_provider *> builtin;
	bool test_override = false;
	std::vector<fi_provider *> test_providers;
};

Registry &registry()
{
	// Never destroyed: providers may still log or be queried from other destructors.
	static Registry *instance = new Registry;
	return *instance;
}

void add_if_available(std::vector<fi_provider *> &out, ProviderInit init)
{
	if (!init)
		return;
	fi_provider *prov = init();
	if (prov && prov->name)
		out.push_back(prov);
}

// Order matters: fi_getinfo reports providers in this order, and RDMA hardware beats sockets.
void load_builtin(std::vector<fi_provider *> &out)
{
#ifdef HAVE_VERBS
	add_if_available(out, ofi_verbs_provider_init);
#endif
#ifdef HAVE_TCP
	add_if_available(out, ofi_tcp_provider_init);
#endif
#ifdef HAVE_SHM
	// Same-host only: after the network cores, so a query naming no provider keeps them first.
	add_if_available(out, ofi_shm_provider_init);
#endif
#ifdef HAVE_RXM
	add_if_available(out, ofi_rxm_provider_init);
#endif
}

void cleanup_providers()
{
	Registry &reg = registry();
	std::lock_guard guard(reg.lock);
	for (fi_provider *prov : reg.builtin)
		if (prov->cleanup)
			prov->cleanup();
	reg.builtin.clear();
	reg.loaded = false;
}

} // namespace

std::vector<fi_provider *> registered_providers()
{
	Registry &reg = registry();
	// Recursive: a provider's init may itself call into the core (params, logging, getinfo).
	std::lock_guard guard(reg.lock);
	if (reg.test_override)
		return reg.test_providers;
	if (!reg.loaded) {
		reg.loaded = true;
		// The core's own variables come first in fi_getparams / "fi_info -e".
		define_core_params();
		load_builtin(reg.builtin);
		// Registered after the providers' static objects exist, so it runs before they are
		// destroyed, at exit() as well as at dlclose() of the library.
		std::atexit(cleanup_providers);
	}
	return reg.builtin;
}

bool is_utility_provider_name(const char *name)
{
	return name && std::strncmp(name, "ofi_", 4) == 0;
}

fi_provider *find_provider(const char *name)
{
	if (!name)
		return nullptr;
	for (fi_provider *prov : registered_providers())
		if (std::strcmp(prov->name, name) == 0)
			return prov;
	return nullptr;
}

void registry_replace_for_test(const std::vector<fi_provider *> &providers)
{
	Registry &reg = registry();
	std::lock_guard guard(reg.lock);
	reg.test_override = true;
	reg.test_providers = providers;
}

void registry_restore_for_test()
{
	Registry &reg = registry();
	std::lock_guard guard(reg.lock);
	reg.test_override = false;
	reg.test_providers.clear();
}

} // namespace ofi::core
