// ShmFabric: the one shm fabric of a process; opens domains and passive endpoints.
#ifndef PROV_SHM_SHM_FABRIC_H
#define PROV_SHM_SHM_FABRIC_H

#include "prov/util/fabric.h"

namespace shm {

class ShmFabric : public util::Fabric {
public:
	ShmFabric(const struct fi_fabric_attr *attr, void *context);

	int domain(struct fi_info *info, struct fid_domain **domain, void *context);
	int passive_ep(struct fi_info *info, struct fid_pep **pep, void *context);
};

int open_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context) noexcept;

} // namespace shm

#endif
