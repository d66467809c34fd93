// ShmDomain: util::Domain (CQs, counters, AV, MR map, progress engine) plus endpoints.
#ifndef PROV_SHM_SHM_DOMAIN_H
#define PROV_SHM_SHM_DOMAIN_H

#include "prov/shm/shm_fabric.h"
#include "prov/util/domain.h"

namespace shm {

class ShmDomain : public util::Domain {
public:
	ShmDomain(ShmFabric &fabric, const struct fi_info *info, void *context);

	int endpoint(struct fi_info *info, struct fid_ep **ep, void *context);
	int ops_open(const char *name, uint64_t flags, void **ops, void *context); // shm_peer_ops.cpp
};

} // namespace shm

#endif
