// The shm provider's identity and its tunables (FI_SHM_* environment variables).
#ifndef PROV_SHM_SHM_PROVIDER_H
#define PROV_SHM_SHM_PROVIDER_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <cstddef>
#include <cstdint>

namespace shm {

extern struct fi_provider provider;

struct Settings {
	size_t tx_size = 256;  // FI_SHM_TX_SIZE: sends queued per endpoint
	size_t rx_size = 256;  // FI_SHM_RX_SIZE: receives posted per endpoint
	bool membarrier = true; // FI_SHM_MEMBARRIER: sleepers fence for the busy side
};

const Settings &settings();
void load_settings();

inline constexpr uint32_t kProviderVersion = FI_VERSION(117, 0);
inline constexpr size_t kMaxCmData = 256;  // FI_OPT_CM_DATA_SIZE
inline constexpr size_t kIovLimit = 4;
inline constexpr size_t kRmaIovLimit = 1; // one target segment per RMA operation
inline constexpr size_t kMaxQueue = 1 << 16;
// One message may span many ring slots; this only keeps sizes sane for applications.
inline constexpr size_t kMaxMsgSize = size_t(1) << 30;

} // namespace shm

#endif
