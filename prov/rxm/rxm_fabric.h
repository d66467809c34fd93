// RxmFabric: the application's fabric; it owns the core provider's fabric it runs over.
#ifndef OFI_PROV_RXM_FABRIC_H
#define OFI_PROV_RXM_FABRIC_H

#include "prov/util/fid_object.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_eq.h>

namespace rxm {

class RxmFabric : public util::FidStorage<fid_fabric>, public util::FidObject {
public:
	RxmFabric(struct fid_fabric *core, void *context);
	int close() override;

	struct fid_fabric *pub() { return &embedded_fid.pub; }
	struct fid_fabric *core() const { return core_; }

	int domain(struct fi_info *info, struct fid_domain **domain, void *context);
	int eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
	int trywait(struct fid **fids, int count);

private:
	struct fid_fabric *core_;
};

int rxm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

} // namespace rxm

#endif
