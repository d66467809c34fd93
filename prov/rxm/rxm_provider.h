// The ofi_rxm provider object, its tunables and logging helpers shared by its files.
#ifndef OFI_PROV_RXM_PROVIDER_H
#define OFI_PROV_RXM_PROVIDER_H

#include <rdma/fabric.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include <cstddef>

extern "C" struct fi_provider *ofi_rxm_provider_init(void);

namespace rxm {

extern struct fi_provider rxm_prov;

constexpr const char *kProviderName = "ofi_rxm";
constexpr uint32_t kProviderVersion = FI_VERSION(117, 0);

// FI_OFI_RXM_* parameters, read once at provider init (names as upstream's fi_info -e shows).
struct RxmParams {
	size_t buffer_size = 16384;  // bounce buffer payload: eager limit and SAR segment size
	// Over byte-stream cores (tcp) unless FI_OFI_RXM_BUFFER_SIZE is set: one core message
	// per 64 KiB costs a quarter of the sends, receive completions and reposts of 16 KiB.
	size_t stream_buffer_size = 65536;
	bool buffer_size_set = false;
	size_t sar_limit = 131072;   // larger messages use rendezvous when the core has RMA
	// Over RDMA cores (credit flow control: verbs RC), a message above the eager size sent
	// while other sends to the same peer are in flight (a stream) goes by rendezvous, not
	// SAR: the read lands in the receive buffer with no copy by either CPU, and its extra
	// round trip overlaps the other messages. A message sent alone (a ping-pong) keeps
	// SAR, which costs fewer trips. Soft-RoCE VM (qemu TCG, one vCPU: copies take the CPU
	// the device needs too), loaded, 3 repetitions, MB/s: fi_bw 48/64/128 KiB by SAR
	// 16-21 / 21-22 / 21-22 (the system, SAR to 128 KiB: 17-23 / 20-22 / 20-23); by rendezvous
	// 29-34 / 37-41 / 42-46; fi_msg_pingpong 24/32 KiB by SAR 30/33, by rendezvous 23/28
	// (system 23/25). prov/rxm/README.md "Streams over RDMA cores".
	bool stream_rndv = true;
	size_t tx_size = 2048;       // rxm tx queue depth reported to applications
	size_t rx_size = 2048;       // rxm rx queue depth reported to applications
	size_t msg_tx_size = 128;    // core MSG endpoint tx depth
	size_t msg_rx_size = 128;    // receive buffers posted per core connection
	bool use_rndv_write = false; // rendezvous by RMA write instead of read
	// Same-host peers: rendezvous data pulled by process_vm_readv (rxm_cma.h), and
	// rendezvous already above cma_rndv_min bytes on connections where that works.
	bool use_cma = true;
	bool use_cma_set = false; // unset: only over byte-stream cores (tcp), see rxm_endpoint.cpp
	// Measured (CPU time of both fi_bw processes, window 64): at 16-24 KiB a pull plus its
	// two small messages costs more than eager's two socket copies; from 64 KiB on it costs
	// less, at 48 KiB about the same.
	size_t cma_rndv_min = 32768;
	bool cma_rndv_min_set = false;
	// Over shared memory (a peer moved to shm, or shm as the core) the alternative is two
	// or three copies through the ring, not a socket: rxm_cost's CPU time per message of a
	// switched peer, keyless pulls, favours eager up to 24 KiB and the pull from 32 KiB on;
	// shm;ofi_rxm's SAR beyond its 16 KiB eager size loses to the pull everywhere. The
	// latency a same-host ping-pong sees favours the pull from 16 KiB on (16385 B: 2.6 us
	// pulled, 3.4 eager through the ring; 20 KiB 2.8 / 4.4; prov/rxm/README.md).
	size_t cma_rndv_min_shm = 16384;
	// Same-host peers move to shared memory (rxm_shm.h) once proved local; both sides must
	// have it on.
	bool use_shm = true; // over cores the switch works over (RxmEndpoint::shm_wanted)
	bool use_srx = true;         // one shared receive context per endpoint when the core has it
	// Eager messages matching a posted receive placed by the core straight into it (cores
	// offering rx_place_ops.h on their shared receive contexts: our tcp).
	bool direct_recv = true;
	bool data_auto_progress = false;
	int conn_timeout_s = 30;     // connection setup limit; 0: wait as long as it takes
	// A rendezvous read the peer does not serve for this long fails its receive with
	// FI_ETIMEDOUT (and the connection); 0: wait as long as it takes.
	int rndv_read_timeout_s = 30;
	// Bytes of unexpected messages buffered per peer before rxm stops reading that peer.
	size_t unexpected_budget = 8u << 20;
	// Microseconds between reads of the core EQ while the core CQ keeps delivering (and
	// on the progress call right after one it delivered to); otherwise every 50 us at most.
	size_t cm_progress_interval_us = 10000;
};

const RxmParams &params();

} // namespace rxm

#define RXM_WARN(subsys, ...) FI_WARN(&::rxm::rxm_prov, subsys, __VA_ARGS__)
#define RXM_INFO(subsys, ...) FI_INFO(&::rxm::rxm_prov, subsys, __VA_ARGS__)
#define RXM_DBG(subsys, ...) FI_DBG(&::rxm::rxm_prov, subsys, __VA_ARGS__)

#endif
