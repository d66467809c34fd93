// TcpFabric: the fabric object (one per subnet name); opens domains and passive endpoints.
#ifndef PROV_TCP_TCP_FABRIC_H
#define PROV_TCP_TCP_FABRIC_H

#include "prov/util/fabric.h"

namespace tcp {

class TcpFabric : public util::Fabric {
public:
	TcpFabric(const struct fi_fabric_attr *attr, void *context);

	int domain(struct fi_info *info, struct fid_domain **domain, void *context);
	int passive_ep(struct fi_info *info, struct fid_pep **pep, void *context);
};

// The provider's fabric entry point (struct fi_provider::fabric).
int open_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context) noexcept;

} // namespace tcp

#endif
