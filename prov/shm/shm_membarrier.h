// The process-wide half of the rings' asymmetric doorbell barrier (the argument is in
// shm_ring.h): membarrier(2)'s MEMBARRIER_CMD_GLOBAL_EXPEDITED, which a side that is about to
// sleep calls so that the busy side may publish without a fence of its own.
#ifndef PROV_SHM_SHM_MEMBARRIER_H
#define PROV_SHM_SHM_MEMBARRIER_H

namespace shm {

// Whether this process takes part: the kernel offers the global expedited command and the
// process is registered for it (registered on the first call of each process, a forked
// child included). False when the call is missing (ENOSYS, seccomp), refused, or forced
// off; a connection set up then uses fences on both sides.
bool membarrier_ready();
// A full memory barrier on every running thread of every registered process (the caller's
// included); false when the call failed.
bool membarrier_all();
// Test hook: pretend membarrier is unavailable for connections set up while it is on.
void membarrier_force_fallback(bool on);

} // namespace shm

#endif
