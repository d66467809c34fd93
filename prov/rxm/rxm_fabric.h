// RxmFabric: the application's fabric; it owns the core provider's fabric it runs over.
// util::Fabric brings EQs and wait sets; this adds domains over the core.
#ifndef OFI_PROV_RXM_FABRIC_H
#define OFI_PROV_RXM_FABRIC_H

#include "prov/util/fabric.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

namespace rxm {

class RxmFabric : public util::Fabric {
public:
	// Opens the core fabric named by attr->prov_name ("tcp;ofi_rxm" -> "tcp"); throws
	// util::Error (-FI_ENODATA without a core name, the core's code if it fails).
	RxmFabric(const struct fi_fabric_attr *attr, void *context);
	~RxmFabric() override;

	struct fid_fabric *core() const { return core_; }

	int domain(struct fi_info *info, struct fid_domain **domain, void *context);
	// EQs and wait sets are util's; CQs and counters rxm's (they wait on the core's queues).
	int trywait(struct fid **fids, int count);

private:
	struct fid_fabric *core_ = nullptr;
};

int rxm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

} // namespace rxm

#endif
