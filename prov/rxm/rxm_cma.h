// Same-host rendezvous by one copy: the receiver pulls the sender's rendezvous buffers with
// process_vm_readv(2) ("cross memory attach") instead of an RMA read through the core, whose
// bytes cross the loopback TCP stack twice.
//
// A pid means something only inside one pid namespace, so a peer's claim "I am process P" is
// proved before it is trusted: each endpoint keeps random token bytes in its own memory and
// offers pid, token address and token value with a rendezvous request; the receiver reads the
// token bytes from that pid and compares. A peer on another host or in another pid namespace
// fails the check (no such process, no permission, other bytes) and its data keeps coming
// through the socket.
//
// Keyless offers: once the peer answered a pulled rendezvous done, the sender registers
// nothing for its next rendezvous (wire_flag::cma_only; keys 0): a registration, its shm
// twin, their binds and closes cost more than the pull's own bookkeeping, and without keys
// the buffers are reachable by nothing but that pull. A keyless pull that fails fails the
// message (there is no RMA read to fall back on).
#ifndef OFI_PROV_RXM_CMA_H
#define OFI_PROV_RXM_CMA_H

#include "prov/rxm/rxm_wire.h"

#include <rdma/fi_endpoint.h>

#include <sys/types.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>

namespace rxm {

constexpr size_t kCmaTokenSize = 16;

// Trailer of a rendezvous request flagged wire_flag::cma (kCmaOfferSize bytes): u32 pid,
// u32 0, u64 token address, kCmaTokenSize token bytes, then the virtual address of each
// segment (the segments' own addresses may be offsets into their registrations), 0 for the
// unused ones.
static_assert(kCmaOfferSize == 16 + kCmaTokenSize + 8 * kRndvMaxSegments);

struct CmaOffer {
	uint32_t pid = 0;
	uint64_t token_addr = 0;
	uint8_t token[kCmaTokenSize] = {};
	uint64_t addr[kRndvMaxSegments] = {};
};

void encode_cma_offer(const CmaOffer &offer, uint8_t *out);
// -FI_EIO unless the payload is exactly one well-formed offer (pid in 1..INT32_MAX).
int decode_cma_offer(std::span<const uint8_t> payload, CmaOffer *offer);

// This process's pid, without a system call per rendezvous (glibc does not cache getpid);
// refreshed in the child of every fork.
uint32_t cma_self_pid();

// Fills token with random bytes; false when the kernel gives none.
bool cma_make_token(uint8_t (&token)[kCmaTokenSize]);

// 0 when process offer.pid holds offer.token at offer.token_addr; otherwise a negative
// errno of process_vm_readv (-EPERM, -ESRCH, -EFAULT, ...) or -FI_EIO for other bytes.
int cma_check_peer(const CmaOffer &offer);

// 0 when process pid holds the socket at the far end of this core connection
// (rxm_cma_owner.h: kernel facts, from the endpoint's fi_getname and fi_getpeer); the
// same-host rendezvous and the move to shm (rxm_shm.h) prove a peer's pid with it.
int cma_check_connection_owner(struct fid_ep *core_ep, uint32_t pid);

// Copies the first to_read bytes of the remote segments (lengths from segs, virtual
// addresses in process pid from addr) into the local iov. 0 when all arrived; else a negative
// errno, or -FI_EIO when the segments or the local iov hold fewer than to_read bytes or the
// copy stopped short.
int cma_pull(pid_t pid, const struct iovec *local, size_t local_count, const RndvSegment *segs,
	     const uint64_t *addr, size_t seg_count, uint64_t to_read);

} // namespace rxm

#endif
