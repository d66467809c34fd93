// The fabric object: the IB/RoCE subnet. Opens domains, passive endpoints and event queues.
// A util::Fabric (api_version, name, references, close); verbs replaces what meets the
// device: its EQs are on rdma_cm event channels and fi_trywait arms verbs CQs and EQs.
#ifndef OFI_PROV_VERBS_FABRIC_H
#define OFI_PROV_VERBS_FABRIC_H

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "prov/util/fabric.h"

namespace verbs {

// Domains, EQs and passive endpoints hold a reference (util::FidObject::ref): the fabric
// cannot close under them.
class VerbsFabric : public util::Fabric {
public:
	static int open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

	int domain(struct fi_info *info, struct fid_domain **domain, void *context);
	int domain2(struct fi_info *info, struct fid_domain **domain, uint64_t flags, void *context);
	int passive_ep(struct fi_info *info, struct fid_pep **pep, void *context);
	int eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
	// Verbs CQs and EQs wait on their own fds (the ibv completion channel, the rdma_cm
	// channel) and cannot join a util wait set: -FI_ENOSYS, as the CQ's FI_WAIT_SET is.
	int wait_open(struct fi_wait_attr *attr, struct fid_wait **waitset);
	int trywait(struct fid **fids, int count);

private:
	VerbsFabric(const struct fi_fabric_attr *attr, void *context);
};

} // namespace verbs

#endif
