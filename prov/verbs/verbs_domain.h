// The domain: one RDMA device (its rdma_cm-owned ibv_context) and a protection domain.
// A util::Domain (info copy, lock, references, close, api version); verbs adds the device,
// its own completion queues, endpoints, shared receive contexts and ibv memory
// registrations, and refuses the util objects it cannot serve (counters, address vectors,
// poll sets, EQ binding).
#ifndef OFI_PROV_VERBS_DOMAIN_H
#define OFI_PROV_VERBS_DOMAIN_H

#include <memory>
#include <mutex>

#include <infiniband/verbs.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include "prov/util/domain.h"
#include "prov/util/mr_cache.h"
#include "prov/verbs/verbs_window_pool.h"

namespace verbs {

class VerbsFabric;

// Endpoints, CQs, MRs and shared receive contexts hold a reference (util::FidObject::ref):
// the domain cannot close under them.
class VerbsDomain : public util::Domain {
public:
	// Throws util::Error: -FI_EINVAL without a device name, -FI_ENODEV for an unknown
	// device, -FI_ENOMEM when the protection domain cannot be allocated.
	VerbsDomain(VerbsFabric &fabric, const struct fi_info *info, void *context);

	struct ibv_context *context() const { return context_; }
	struct ibv_pd *pd() const { return pd_.get(); }
	const struct ibv_device_attr &device_attr() const { return device_attr_; }

	// fi_cq_strerror: prov_errno of a verbs CQ error entry is an ibv_wc_status.
	const char *prov_strerror(int prov_errno, const void *err_data, char *buf,
				  size_t len) override;

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

	// What util::Domain offers but verbs does not (-FI_ENOSYS): counters, address vectors
	// and poll sets (FI_EP_MSG has no AV; completions are counted nowhere), and binding an
	// EQ (verbs registers memory synchronously and reports nothing through the domain).
	int cntr_open(struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context);
	int av_open(struct fi_av_attr *attr, struct fid_av **av, void *context);
	int poll_open(struct fi_poll_attr *attr, struct fid_poll **pollset);
	int bind(struct fid *bfid, uint64_t flags);

	// The cache of local-access registrations (made on first use); nullptr when it cannot
	// cache (no userfaultfd, FI_MR_CACHE_MONITOR=disabled, FI_MR_CACHE_MAX_COUNT=0, ODP).
	util::MrCache *mr_cache();
	// Whether remote-read registrations made with OFI_MR_BIND_TO_EP become type-2 memory
	// windows over cached registrations (the device has them, FI_VERBS_USE_MW, no ODP).
	// The cache then registers with IBV_ACCESS_MW_BIND.
	bool windows_usable() const { return windows_usable_; }
	// The windows rendezvous sources are offered through (only when windows_usable()).
	WindowPool &windows() { return *windows_; }

private:
	// ibv_reg_mr / ibv_dereg_mr on this domain's PD, for the cache.
	class Registrar : public util::MrRegistrar {
	public:
		explicit Registrar(VerbsDomain &domain) : domain_(domain) {}
		void *reg(void *addr, size_t len, uint64_t access, int *err) noexcept override;
		void dereg(void *handle) noexcept override;

	private:
		VerbsDomain &domain_;
	};

	struct DeviceListDeleter {
		void operator()(struct ibv_context **list) const;
	};
	struct PdDeleter {
		void operator()(struct ibv_pd *pd) const { ibv_dealloc_pd(pd); }
	};

	// Declared in this order so the PD goes before the device list that owns its context.
	std::unique_ptr<struct ibv_context *, DeviceListDeleter> device_list_; // rdma_get_devices()
	struct ibv_context *context_ = nullptr;
	struct ibv_device_attr device_attr_ {};
	bool windows_usable_ = false;
	std::unique_ptr<struct ibv_pd, PdDeleter> pd_;
	// After the PD: cached registrations go before it.
	Registrar registrar_{*this};
	std::once_flag mr_cache_once_;
	std::unique_ptr<util::MrCache> mr_cache_;
	// After the PD and the cache: its free windows go before them.
	std::unique_ptr<WindowPool> windows_;
};

} // namespace verbs

#endif
