// Same-host peers over shared memory: once a core (tcp) connection is up and both endpoints
// have FI_OFI_RXM_USE_SHM on, the connection's traffic moves to a shm connection between the
// two processes (README.md, "Same-host peers over shm"). This is the endpoint's shm side: one
// shm fabric, domain, EQ, CQ and passive endpoint, opened on first use, whose completions rxm's
// progress drains like the core's and whose wait fds join the core's as wait sources.
#ifndef OFI_PROV_RXM_SHM_H
#define OFI_PROV_RXM_SHM_H

#include "prov/rxm/rxm_core_wait.h"
#include "prov/rxm/rxm_wire.h"

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>

struct ofi_shm_peer_ops;

namespace rxm {

// Receive buffers posted per shm connection: the ring keeps what finds none (backpressure),
// so a few suffice; each one a message lands in becomes resident.
constexpr size_t kShmRxBuffers = 4;

struct ShmPath {
	struct fi_info *info = nullptr;
	struct fid_fabric *fabric = nullptr;
	struct fid_domain *domain = nullptr;
	struct fid_eq *eq = nullptr;
	struct fid_cq *cq = nullptr;
	struct fid_pep *pep = nullptr;
	char name[kShmNameSize] = {}; // the listener's address, NUL-padded (what offers carry)
	size_t iov_limit = 1;
	// Our shm's kernel-given peer pid (prov/shm/shm_peer_ops.h); null over another shm.
	struct ofi_shm_peer_ops *peer_ops = nullptr;
	CoreWaitFds cq_wait;
	CoreWaitFds eq_wait;
	bool wait_registered = false;
	bool polled = false; // no wait fds: sleepers look every millisecond (fd-less source)

	ShmPath() = default;
	ShmPath(const ShmPath &) = delete;
	ShmPath &operator=(const ShmPath &) = delete;
	~ShmPath();
};

// The pid in the name shm gives a connection request's source ("fi_shm://peer.PID", from
// SO_PEERCRED, a kernel fact) or in a listener name it picked ("fi_shm://PID:N", a claim);
// 0 when the name has none.
uint32_t shm_name_pid(const char *name, size_t len);

} // namespace rxm

#endif
