// Registration of the verbs provider with the core, and its FI_VERBS_* tunables.
#include "prov/verbs/verbs_provider.h"

#include <algorithm>

#include "prov/verbs/verbs_discovery.h"
#include "prov/verbs/verbs_fabric.h"
#include "prov/util/error.h"
#include "src/registry.h"

namespace verbs {
namespace {

Params g_params;

int provider_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		     const struct fi_info *hints, struct fi_info **info) noexcept
{
	try {
		return build_infos(version, node, service, flags, hints, info);
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

int provider_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		    void *context) noexcept
{
	try {
		return VerbsFabric::open(attr, fabric, context);
	} catch (const util::Error &e) {
		return e.code();
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	} catch (...) {
		return -FI_EOTHER;
	}
}

void provider_cleanup() noexcept {}

void define_params()
{
	fi_param_define(&provider, "device_name", FI_PARAM_STRING,
			"Use only this RDMA device (e.g. rxe0)");
	fi_param_define(&provider, "iface", FI_PARAM_STRING,
			"Use only addresses of network interfaces whose name starts with this");
	fi_param_define(&provider, "tx_size", FI_PARAM_SIZE_T,
			"Default transmit queue depth (default %zu)", g_params.tx_size);
	fi_param_define(&provider, "rx_size", FI_PARAM_SIZE_T,
			"Default receive queue depth (default %zu)", g_params.rx_size);
	fi_param_define(&provider, "tx_iov_limit", FI_PARAM_SIZE_T,
			"Default transmit iov limit (default %zu)", g_params.tx_iov_limit);
	fi_param_define(&provider, "rx_iov_limit", FI_PARAM_SIZE_T,
			"Default receive iov limit (default %zu)", g_params.rx_iov_limit);
	fi_param_define(&provider, "inline_size", FI_PARAM_SIZE_T,
			"Inline data size asked of the device; becomes inject_size (default %zu)",
			g_params.inline_size);
	fi_param_define(&provider, "gid_idx", FI_PARAM_INT,
			"GID index whose subnet prefix names the fabric (default %d)",
			g_params.gid_idx);
	fi_param_define(&provider, "min_rnr_timer", FI_PARAM_INT,
			"Minimum RNR NAK timer code 0-31 of receiving QPs (default %d)",
			g_params.min_rnr_timer);
	fi_param_define(&provider, "rnr_retry", FI_PARAM_INT,
			"Retries 0-7 of a send that found no receive posted; 7 retries forever, 0 "
			"fails the connection at once (tests use it to catch flow-control bugs) "
			"(default %d)", g_params.rnr_retry);
	fi_param_define(&provider, "use_odp", FI_PARAM_BOOL,
			"Register memory as on-demand paging (default no)");
	fi_param_define(&provider, "use_mw", FI_PARAM_BOOL,
			"Offer ofi_rxm's rendezvous sources to their one peer through type-2 memory "
			"windows bound over its connection to cached registrations, instead of a "
			"registration with remote access per message, when the device has them "
			"(default yes)");
	fi_param_define(&provider, "yield_before_sleep", FI_PARAM_BOOL,
			"A reader that finds a CQ empty and is about to sleep on it (fi_cq_sread, "
			"fi_trywait) yields the CPU once and looks again first (default yes)");
}

void read_params()
{
	char *text = nullptr;
	if (fi_param_get_str(&provider, "device_name", &text) == 0 && text)
		g_params.device_name = text;
	text = nullptr;
	if (fi_param_get_str(&provider, "iface", &text) == 0 && text)
		g_params.iface = text;
	size_t size = 0;
	if (fi_param_get_size_t(&provider, "tx_size", &size) == 0 && size > 0)
		g_params.tx_size = size;
	if (fi_param_get_size_t(&provider, "rx_size", &size) == 0 && size > 0)
		g_params.rx_size = size;
	if (fi_param_get_size_t(&provider, "tx_iov_limit", &size) == 0 && size > 0)
		g_params.tx_iov_limit = std::min(size, kMaxSge);
	if (fi_param_get_size_t(&provider, "rx_iov_limit", &size) == 0 && size > 0)
		g_params.rx_iov_limit = std::min(size, kMaxSge);
	if (fi_param_get_size_t(&provider, "inline_size", &size) == 0)
		g_params.inline_size = size;
	int value = 0;
	if (fi_param_get_int(&provider, "gid_idx", &value) == 0 && value >= 0)
		g_params.gid_idx = value;
	if (fi_param_get_int(&provider, "min_rnr_timer", &value) == 0 && value >= 0 && value <= 31)
		g_params.min_rnr_timer = value;
	if (fi_param_get_int(&provider, "rnr_retry", &value) == 0 && value >= 0 && value <= 7)
		g_params.rnr_retry = value;
	if (fi_param_get_bool(&provider, "use_odp", &value) == 0)
		g_params.use_odp = value != 0;
	if (fi_param_get_bool(&provider, "use_mw", &value) == 0)
		g_params.use_mw = value != 0;
	if (fi_param_get_bool(&provider, "yield_before_sleep", &value) == 0)
		g_params.yield_before_sleep = value != 0;
}

} // namespace

struct fi_provider provider = {
	.version = kProviderVersion,
	.fi_version = FI_VERSION(1, 17),
	.context = {},
	.name = kProviderName,
	.getinfo = provider_getinfo,
	.fabric = provider_fabric,
	.cleanup = provider_cleanup,
};

const Params &params()
{
	return g_params;
}

} // namespace verbs

extern "C" struct fi_provider *ofi_verbs_provider_init(void)
{
	try {
		verbs::define_params();
		verbs::read_params();
	} catch (...) {
		return nullptr;
	}
	// Always registered: on a host without RDMA devices getinfo simply finds nothing.
	return &verbs::provider;
}
