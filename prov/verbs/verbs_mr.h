// A registered memory region: an ibv_mr whose lkey is used locally (the descriptor apps
// pass as desc) and whose rkey is the key peers use for RMA. A remote-read registration
// made with OFI_MR_BIND_TO_EP (prov/util/mr_bind_flag.h; ofi_rxm's rendezvous sources) is
// instead, when the device has type-2 memory windows, a cached local registration plus a
// window: its key works only once fi_mr_bind + fi_mr_enable bound the window over one
// endpoint's QP, only for that QP's peer, and no longer once the region is closed (the
// peer invalidated it, or ibv_dealloc_mw does so synchronously: verbs_window_pool.h). The
// pages are then pinned once, not per message, and windows are reused.
#ifndef OFI_PROV_VERBS_MR_H
#define OFI_PROV_VERBS_MR_H

#include <infiniband/verbs.h>
#include <rdma/fi_domain.h>

#include "prov/util/fid_object.h"
#include "prov/util/mr_cache.h"

namespace verbs {

class VerbsDomain;

class VerbsMemoryRegion : public util::FidStorage<fid_mr>, public util::FidObject {
public:
	// Registers attr's one iovec with ibv_reg_mr (through the domain's MR cache when it
	// grants local access only: a remote right ends with its region); throws util::Error for bad attributes
	// (-FI_EINVAL, -FI_EBADFLAGS, -FI_ENOSYS for several iovecs or device memory) or a
	// refused registration.
	VerbsMemoryRegion(VerbsDomain &domain, const struct fi_mr_attr &attr, uint64_t flags);
	~VerbsMemoryRegion() override;
	struct fid_mr *mr_fid() { return &embedded_fid.pub; }
	// desc values handed to data calls are fi_mr_desc() results, i.e. this region's fid;
	// nullptr for anything else (another provider's descriptor, a closed region, garbage
	// that happens to be readable).
	static VerbsMemoryRegion *from_desc(const void *desc);

	// The ibv access flags a set of FI_* access bits needs; 0 access means all of them.
	static int ibv_access_for(uint64_t access);

	uint32_t lkey() const { return mr_->lkey; }
	VerbsDomain *domain() const { return &domain_; }
	// Whether [addr, addr+len) lies inside the registration.
	bool covers(const void *addr, size_t len) const;

	int close() override;
	// fi_mr_bind to a verbs endpoint, then fi_mr_enable: a window region becomes reachable
	// by that endpoint's peer. -FI_ENOSYS for a region without a window (its key already
	// works over every QP of the domain, see README.md).
	int bind(struct fid *bfid, uint64_t flags);
	int control(int command, void *arg);
	bool is_window() const { return window_ != nullptr; }

private:
	// Makes this region a window over a cached registration of iov; false (nothing held)
	// when the cache or the device cannot.
	bool make_window(util::MrCache &cache, const struct iovec &iov);
	int enable_window();

	VerbsDomain &domain_;
	struct ibv_mr *mr_ = nullptr;
	// Set when mr_ is the domain MR cache's (local access only): released, not
	// deregistered, at close.
	util::MrCacheEntry *cached_ = nullptr;
	// Window regions: the window, the range it offers, and the endpoint fi_mr_bind named
	// (referenced until fi_mr_enable posts the bind on its QP).
	struct VerbsWindow *window_ = nullptr; // the domain's WindowPool's
	struct iovec window_iov_ {};
	class VerbsEndpoint *bind_ep_ = nullptr;
	bool window_bound_ = false;
};

} // namespace verbs

#endif
