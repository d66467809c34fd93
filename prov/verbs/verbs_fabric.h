// The fabric object: the IB/RoCE subnet. Opens domains, passive endpoints and event queues.
#ifndef OFI_PROV_VERBS_FABRIC_H
#define OFI_PROV_VERBS_FABRIC_H

#include <atomic>
#include <string>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include "prov/verbs/verbs_fid.h"

namespace verbs {

class VerbsFabric {
public:
	static constexpr uint32_t kTag = 0x76666162; // "vfab"
	static int open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
	static VerbsFabric *from_fid(const void *fid) { return Holder::recover(fid); }

	uint32_t api_version() const { return fid_.pub.api_version; }
	struct fid_fabric *fabric_fid() { return &fid_.pub; }
	// Domains, EQs and passive endpoints opened on this fabric: it cannot close under them.
	std::atomic<int> children{0};

	int close();
	int domain(struct fi_info *info, struct fid_domain **domain, void *context);
	int domain2(struct fi_info *info, struct fid_domain **domain, uint64_t flags, void *context);
	int passive_ep(struct fi_info *info, struct fid_pep **pep, void *context);
	int eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context);
	int trywait(struct fid **fids, int count);

private:
	using Holder = FidHolder<struct fid_fabric, VerbsFabric>;
	VerbsFabric() = default;
	Holder fid_;
	std::string name_;
};

} // namespace verbs

#endif
