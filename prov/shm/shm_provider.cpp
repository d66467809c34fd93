#include "prov/shm/shm_provider.h"

#include "prov/shm/shm_fabric.h"
#include "prov/shm/shm_info.h"

#include <algorithm>
#include <new>

namespace shm {
namespace {

Settings g_settings;

int shm_getinfo_entry(uint32_t version, const char *node, const char *service, uint64_t flags,
		      const struct fi_info *hints, struct fi_info **info) noexcept
{
	try {
		return get_infos(version, node, service, flags, hints, info);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

void shm_cleanup() noexcept {}

size_t read_size(const char *name, size_t fallback)
{
	size_t value = 0;
	if (fi_param_get_size_t(&provider, name, &value) == FI_SUCCESS && value > 0)
		return std::min(value, kMaxQueue);
	return fallback;
}

} // namespace

struct fi_provider provider = {
	.version = kProviderVersion,
	.fi_version = FI_VERSION(1, 17),
	.context = {},
	.name = "shm",
	.getinfo = shm_getinfo_entry,
	.fabric = open_fabric,
	.cleanup = shm_cleanup,
};

const Settings &settings()
{
	return g_settings;
}

void load_settings()
{
	static bool defined = false;
	if (!defined) {
		defined = true;
		fi_param_define(&provider, "tx_size", FI_PARAM_SIZE_T,
				"sends an endpoint can queue (default: 256)");
		fi_param_define(&provider, "rx_size", FI_PARAM_SIZE_T,
				"receives an endpoint can post (default: 256)");
		fi_param_define(&provider, "membarrier", FI_PARAM_BOOL,
				"a side about to sleep calls membarrier(2) so that the busy "
				"side publishes without a fence (default: 1)");
	}
	Settings s;
	s.tx_size = read_size("tx_size", s.tx_size);
	s.rx_size = read_size("rx_size", s.rx_size);
	int membarrier = 1;
	if (fi_param_get_bool(&provider, "membarrier", &membarrier) == FI_SUCCESS)
		s.membarrier = membarrier != 0;
	g_settings = s;
}

} // namespace shm

extern "C" struct fi_provider *ofi_shm_provider_init(void)
{
	try {
		shm::load_settings();
	} catch (...) {
		return nullptr;
	}
	return &shm::provider;
}
