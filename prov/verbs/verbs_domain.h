// The domain: one RDMA device (its rdma_cm-owned ibv_context) and a protection domain.
// Opens completion queues, endpoints and memory registrations.
#ifndef OFI_PROV_VERBS_DOMAIN_H
#define OFI_PROV_VERBS_DOMAIN_H

#include <string>

#include <infiniband/verbs.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "prov/util/fid_object.h"

namespace verbs {

class VerbsFabric;

// Endpoints, CQs, MRs and shared receive contexts hold a reference (util::FidObject::ref):
// the domain cannot close under them.
class VerbsDomain : public util::FidStorage<fid_domain>, public util::FidObject {
public:
	static int open(VerbsFabric *fabric, struct fi_info *info, struct fid_domain **domain,
			void *context);

	struct ibv_context *context() const { return context_; }
	struct ibv_pd *pd() const { return pd_; }
	const struct ibv_device_attr &device_attr() const { return device_attr_; }
	const struct fi_info *info() const { return info_; }
	VerbsFabric *fabric() const { return fabric_; }
	uint32_t api_version() const;
	struct fid_domain *domain_fid() { return &embedded_fid.pub; }

	int close() override;
	// OFI_FLOW_CTRL_OPS_NAME: the credit flow-control hooks (prov/util/flow_ctrl_ops.h).
	int ops_open(const char *name, uint64_t flags, void **ops, void *context);
	int cq_open(struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
	int endpoint(struct fi_info *info, struct fid_ep **ep, void *context);
	int srx_context(struct fi_rx_attr *attr, struct fid_ep **srx, void *context);
	int endpoint2(struct fi_info *info, struct fid_ep **ep, uint64_t flags, void *context);
	int mr_reg(const void *buf, size_t len, uint64_t access, uint64_t offset,
		   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
	int mr_regv(const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		    uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
	int mr_regattr(const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr);

private:
	VerbsDomain(VerbsFabric *fabric, void *context);
	~VerbsDomain() override;
	VerbsFabric *fabric_;
	struct fi_info *info_ = nullptr;
	struct ibv_context **device_list_ = nullptr; // rdma_get_devices(); owns context_
	struct ibv_context *context_ = nullptr;
	struct ibv_pd *pd_ = nullptr;
	struct ibv_device_attr device_attr_ {};
};

} // namespace verbs

#endif
