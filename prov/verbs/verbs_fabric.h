// The fabric object: the IB/RoCE subnet. Opens domains, passive endpoints and event queues.
#ifndef OFI_PROV_VERBS_FABRIC_H
#define OFI_PROV_VERBS_FABRIC_H

#include <string>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "prov/util/fid_object.h"

namespace verbs {

// Domains, EQs and passive endpoints hold a reference (util::FidObject::ref): the fabric
// cannot close under them.
class VerbsFabric : public util::FidStorage<fid_fabric>, public util::FidObject {
public:
	static int open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

	uint32_t api_version() const { return embedded_fid.pub.api_version; }
	struct fid_fabric *fabric_fid() { return &embedded_fid.pub; }

	int domain(struct fi_info *info, struct fid_domain **domain, void *context);
	int domain2(struct fi_info *info, struct fid_domain **domain, uint64_t flags, void *context);
	int passive_ep(struct fi_info *info, struct fid_pep **pep, void *context);
	int eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
	int trywait(struct fid **fids, int count);

private:
	explicit VerbsFabric(void *context);
	std::string name_;
};

} // namespace verbs

#endif
