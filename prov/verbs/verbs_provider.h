// The verbs provider's registration record, its tunables (FI_VERBS_*) and logging shorthands.
#ifndef OFI_PROV_VERBS_PROVIDER_H
#define OFI_PROV_VERBS_PROVIDER_H

#include <cerrno>
#include <cstddef>
#include <string>

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

namespace verbs {

extern struct fi_provider provider;

// Like libfabric's own providers (and our tcp and ofi_rxm): the release, 1.17, as 117.0.
inline constexpr uint32_t kProviderVersion = FI_VERSION(117, 0);
inline constexpr const char *kProviderName = "verbs";

// Values of the FI_VERBS_* environment variables, read once when the provider loads.
struct Params {
	std::string device_name;  // only this RDMA device (empty: all)
	std::string iface;        // only addresses on netdevs whose name starts with this
	size_t tx_size = 384;
	size_t rx_size = 384;
	size_t tx_iov_limit = 4;
	size_t rx_iov_limit = 4;
	size_t inline_size = 256; // asked of the device; the QP reports what it grants
	int gid_idx = 0;
	int min_rnr_timer = 12;
	int rnr_retry = 7;        // retries of receiver-not-ready NAKs; 7 means forever
	bool use_odp = false;
	bool use_mw = true; // rxm's rendezvous sources as memory windows over cached registrations
	bool yield_before_sleep = true; // a reader about to sleep on a CQ yields the CPU once first
};
const Params &params();

// Largest scatter/gather list a request slot can hold (caps the iov limits above).
inline constexpr size_t kMaxSge = 8;

} // namespace verbs

#define VERBS_WARN(subsys, ...) FI_WARN(&::verbs::provider, subsys, __VA_ARGS__)
#define VERBS_INFO(subsys, ...) FI_INFO(&::verbs::provider, subsys, __VA_ARGS__)

#endif
