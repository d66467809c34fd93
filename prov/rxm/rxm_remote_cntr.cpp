// Remote-side counters (FI_REMOTE_READ / FI_REMOTE_WRITE, endpoints made with FI_RMA_EVENT).
// A peer's RMA lands on the core endpoint of its connection, not in rxm: rxm binds one core
// counter per kind to every core endpoint and, on each progress pass, adds what they grew by
// to the application's counters. Emulated atomics run in rxm and are counted where they run
// (fi_endpoint(3): a base atomic counts as a remote write, fetch and compare ones as reads).
#include "prov/rxm/rxm_cntr.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"

#include <rdma/fi_errno.h>

namespace rxm {

int RxmEndpoint::open_remote_counters()
{
	util::Counter *wanted[2] = {counter(kRemoteReadCntr), counter(kRemoteWriteCntr)};
	for (int i = 0; i < 2; i++) {
		if (!wanted[i])
			continue;
		struct fi_cntr_attr attr{};
		attr.events = FI_CNTR_EVENTS_COMP;
		attr.wait_obj = FI_WAIT_NONE;
		int ret = fi_cntr_open(domain_->core(), &attr, &core_remote_cntr_[i], nullptr);
		if (ret)
			return ret;
		core_remote_seen_[i] = 0;
	}
	return 0;
}

void RxmEndpoint::collect_remote_counts()
{
	util::Counter *targets[2] = {counter(kRemoteReadCntr), counter(kRemoteWriteCntr)};
	for (int i = 0; i < 2; i++) {
		if (!core_remote_cntr_[i])
			continue;
		uint64_t now = fi_cntr_read(core_remote_cntr_[i]);
		if (now != core_remote_seen_[i]) {
			targets[i]->increment(now - core_remote_seen_[i]);
			core_remote_seen_[i] = now;
		}
		// RMA of peers moved to shm lands on their shm endpoints (rxm_shm.h).
		if (!shm_ || !shm_->remote_cntr[i])
			continue;
		now = fi_cntr_read(shm_->remote_cntr[i]);
		if (now != shm_->remote_seen[i]) {
			targets[i]->increment(now - shm_->remote_seen[i]);
			shm_->remote_seen[i] = now;
		}
	}
}

} // namespace rxm
