// The tcp provider's identity and its tunables (FI_TCP_* environment variables).
#ifndef PROV_TCP_TCP_PROVIDER_H
#define PROV_TCP_TCP_PROVIDER_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace tcp {

extern struct fi_provider provider;

// Values read once from FI_TCP_* at provider init.
struct Settings {
	std::string iface;          // FI_TCP_IFACE: only report this interface
	int port_low = 0;           // FI_TCP_PORT_LOW_RANGE / HIGH_RANGE: ports for binds
	int port_high = 0;          //   without an explicit port (0 = kernel chooses)
	size_t tx_size = 256;       // FI_TCP_TX_SIZE
	size_t rx_size = 256;       // FI_TCP_RX_SIZE
	size_t max_inject = 128;    // FI_TCP_MAX_INJECT
	bool nodelay = true;        // FI_TCP_NODELAY
	// FI_TCP_COALESCE_SENDS: a send posted after another in the same progress pass waits
	// for the next pass, which sends the burst in one sendmsg (manual progress only).
	bool coalesce_sends = true;
	// An accepted socket is a handshake until its CM request is complete; these bound what
	// peers that never finish one can hold (fds, listener attention).
	int cm_request_timeout_ms = 5000;    // FI_TCP_CM_REQUEST_TIMEOUT
	size_t max_pending_conn = 512;       // FI_TCP_MAX_PENDING_CONN (per listener)
	size_t max_pending_conn_per_ip = 64; // FI_TCP_MAX_PENDING_CONN_PER_IP
};

const Settings &settings();
// FI_TCP_RX_STALL_TIMEOUT, read when a domain opens: ms a connection may sit with a frame
// partly received and no byte arriving before it is failed (0: never).
uint64_t rx_stall_timeout_ms();
inline constexpr uint64_t kDefaultRxStallTimeoutMs = 30000;
// Reads the environment; called by ofi_tcp_provider_init (and tests).
void load_settings();

inline constexpr uint32_t kProviderVersion = FI_VERSION(117, 0);
inline constexpr size_t kMaxCmData = 256;   // FI_OPT_CM_DATA_SIZE
inline constexpr size_t kIovLimit = 4;
inline constexpr size_t kRmaIovLimit = 1;   // one target region per RMA operation

} // namespace tcp

#endif
