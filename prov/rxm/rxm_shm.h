// Same-host peers over shared memory: once a core (tcp) connection is up and both endpoints
// have FI_OFI_RXM_USE_SHM on, the connection's traffic moves to a shm connection between the
// two processes (README.md, "Same-host peers over shm"). This is the endpoint's shm side: one
// shm EQ, CQ and passive endpoint on the domain's shm domain, opened on first use, whose
// completions rxm's progress drains like the core's and whose wait fds join the core's as
// wait sources.
#ifndef OFI_PROV_RXM_SHM_H
#define OFI_PROV_RXM_SHM_H

#include "prov/rxm/rxm_core_wait.h"
#include "prov/rxm/rxm_wire.h"
#include "prov/util/cq_progress_ops.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>

struct ofi_shm_peer_ops;
struct ofi_rx_inplace_ops;
struct ofi_framed_send_ops;

namespace rxm {

// Receive buffers posted per shm connection: the ring keeps what finds none (backpressure),
// so a few suffice; each one a message lands in becomes resident.
constexpr size_t kShmRxBuffers = 4;

// An endpoint's shm side. The fabric, domain and info are the rxm domain's (shared by its
// endpoints: the domain holds the registrations); the rest is the endpoint's own.
struct ShmPath {
	const struct fi_info *info = nullptr;
	struct fid_fabric *fabric = nullptr;
	struct fid_domain *domain = nullptr;
	struct fid_eq *eq = nullptr;
	struct fid_cq *cq = nullptr;
	// cq's progress entry (prov/util/cq_progress_ops.h), or null: fi_cq_read.
	const struct ofi_cq_progress_ops *cq_progress = nullptr;
	struct fid_pep *pep = nullptr;
	// Remote-side counters (FI_RMA_EVENT), as the core's (rxm_remote_cntr.cpp): [0] reads,
	// [1] writes; bound to every shm endpoint, added to the application's on progress.
	struct fid_cntr *remote_cntr[2] = {};
	uint64_t remote_seen[2] = {};
	char name[kShmNameSize] = {}; // the listener's address, NUL-padded (what offers carry)
	size_t iov_limit = 1;
	// Our shm's kernel-given peer pid (prov/shm/shm_peer_ops.h); null over another shm.
	struct ofi_shm_peer_ops *peer_ops = nullptr;
	// Our shm's messages consumed in the ring (prov/util/rx_inplace_ops.h), or null.
	struct ofi_rx_inplace_ops *inplace_ops = nullptr;
	// Our shm's framed one-slot sends (prov/shm/shm_send_ops.h), or null: fi_inject.
	const struct ofi_framed_send_ops *send_ops = nullptr;
	CoreWaitFds cq_wait;
	CoreWaitFds eq_wait;
	bool wait_registered = false;
	bool polled = false; // no wait fds: sleepers look every millisecond (fd-less source)

	ShmPath() = default;
	ShmPath(const ShmPath &) = delete;
	ShmPath &operator=(const ShmPath &) = delete;
	~ShmPath();
};

// Not a wire flag: on_rx_buffer sets it in a decoded header (never encoded) when the message
// came over shm, and it travels with the message's flags (RecvOp::wire_flags). A rendezvous
// transfer of such a message goes over shm as well: its sender had moved when it sent it, so
// the registrations it offered have their twins in its shm domain (and only then).
constexpr uint16_t kArrivedOnShm = 1 << 15;
static_assert((kArrivedOnShm & wire_flag::all) == 0, "collides with a wire flag");

// Closes the registrations rxm made for one operation, each shm twin before its original.
void close_own_mrs(struct fid_mr **core, struct fid_mr **shm, size_t *count);

// The pid in the name shm gives a connection request's source ("fi_shm://peer.PID", from
// SO_PEERCRED, a kernel fact) or in a listener name it picked ("fi_shm://PID:N", a claim);
// 0 when the name has none.
uint32_t shm_name_pid(const char *name, size_t len);

} // namespace rxm

#endif
