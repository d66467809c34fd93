// RxmDomain: the application's domain over one core MSG domain. util::Domain brings the
// lock, the (idle) progress engine, EQ binding and poll sets; this opens the core domain,
// registers memory with it (RxmMr) and creates rxm AVs, CQs, counters and endpoints.
#ifndef OFI_PROV_RXM_DOMAIN_H
#define OFI_PROV_RXM_DOMAIN_H

#include "prov/util/domain.h"
#include "prov/util/fid_object.h"

#include <rdma/fabric.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>

#include "prov/util/flow_ctrl_ops.h"
#include "prov/util/quiet_ops.h"
#include "prov/util/send_hold_ops.h"
#include "prov/util/rx_hold_ops.h"
#include "prov/util/rx_inplace_ops.h"
#include "prov/util/rx_place_ops.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <unordered_map>

namespace rxm {

class RxmFabric;

// rxm touches its core and shm domains only from the application's calls on its own objects,
// under an endpoint's lock, or from its per-endpoint progress thread. Endpoint locks do not
// serialise the domain (its endpoints and registrations share the lower domains), so the
// lower domains may skip their locks (util: FI_THREAD_DOMAIN with manual progress) only when
// the application serialises the whole domain (FI_THREAD_DOMAIN) and rxm runs no thread.
bool lower_domains_need_no_lock(const struct fi_info *info);

class RxmDomain : public util::Domain {
public:
	// Opens the core domain for 'info' (its core MSG info: core_info_for); throws
	// util::Error (-FI_ENODATA without a core, the core's code if fi_domain fails).
	RxmDomain(RxmFabric &fabric, const struct fi_info *info, void *context);
	int close() override;

	struct fid_domain *core() const { return core_.get(); }
	const struct fi_info *core_info() const { return core_info_.get(); }
	RxmFabric &rxm_fabric() const { return rxm_fabric_; }
	// Whether rxm must register its own buffers before the core may use them.
	bool core_needs_local_mr() const;
	bool core_uses_virt_addr() const;
	bool rma_capable() const { return rma_capable_; }
	// The core's credit flow-control hooks (verbs), or nullptr when the core buffers on its
	// own (tcp): then rxm grants no credits and counts none.
	const struct ofi_flow_ctrl_ops *flow_ctrl() const { return flow_ctrl_; }
	// Registers rxm's own buffers with the core. When the core lets the user choose keys
	// the key is 64 random bits (util::random_key: a peer cannot guess the key of a
	// rendezvous buffer offered to another); a clash with an existing key draws again.
	// A remote-read-only registration (a rendezvous source, which bind_internal binds
	// before its key goes out) asks the core for OFI_MR_BIND_TO_EP (our verbs: a memory
	// window over a cached registration); a core that refuses the flag is asked without.
	int register_internal(void *buf, size_t len, uint64_t access, struct fid_mr **mr);
	// Restricts an internal registration to RMA arriving on 'core_ep' (fi_mr_bind +
	// fi_mr_enable, fi_mr(3)'s endpoint binding). A core that refuses keeps serving it
	// domain-wide (logged once at info level): rxm still works, with the key's secrecy
	// as the only protection, and this returns 0. -FI_ENOTCONN when the connection has no
	// core endpoint any more (failed): the caller must not offer the key. -FI_EAGAIN when
	// the core has no room to bind now (a verbs window's bind request): try again later,
	// before the key goes out. Binding an already bound registration again is a no-op.
	// *bound (optional): whether the core bound it (0 returned by fi_mr_bind and
	// fi_mr_enable), i.e. whether its key may be invalidated by the peer's send.
	int bind_internal(struct fid_mr *mr, struct fid_ep *core_ep, bool *bound = nullptr);
	// The core refused OFI_SEND_INVALIDATE (a foreign core): rndv_done goes plainly.
	bool core_refuses_send_invalidate() const
	{
		return core_refuses_send_invalidate_.load(std::memory_order_relaxed);
	}
	void note_core_refuses_send_invalidate()
	{
		core_refuses_send_invalidate_.store(true, std::memory_order_relaxed);
	}
	// The core's hold/release of one connection's stream (our tcp), or nullptr.
	const struct ofi_rx_hold_ops *rx_hold() const { return rx_hold_; }
	// The core's "this connection stays quiet" hint (our tcp), or nullptr.
	const struct ofi_quiet_ops *quiet() const { return quiet_; }
	// The core holds FI_MORE sends for its next pass, and only those (send_hold_ops.h).
	bool core_holds_more() const { return core_holds_more_; }
	// The core's placement of messages by their header (our tcp), or nullptr.
	const struct ofi_rx_place_ops *rx_place() const { return rx_place_; }
	// The core's messages consumed where they arrive (our shm as the core), or nullptr.
	const struct ofi_rx_inplace_ops *rx_inplace() const { return rx_inplace_; }

	// Same-host peers (rxm_shm_domain.cpp, README.md "Same-host peers over shm"): the shm
	// fabric and domain every endpoint's shm side uses, opened on first use. MRs are per
	// domain, so every registration a peer may reach (the application's with remote access,
	// rxm's rendezvous buffers) has a twin there under the key the peer already knows, over
	// the same bytes and addressed the same way: a peer reaches over shm exactly what it
	// reaches over the core. 0, or why there is no shm side (then it stays so).
	int open_shm_domain();
	struct fid_fabric *shm_fabric() const { return shm_fabric_.get(); }
	struct fid_domain *shm_domain() const { return shm_domain_.get(); }
	const struct fi_info *shm_info() const { return shm_info_.get(); }
	// The shm twin of [buf, buf + len) under 'key': 'offset' is the core registration's
	// fi_mr_attr.offset, used when the core addresses by offset (over FI_MR_VIRT_ADDR the
	// twin is addressed by virtual address instead). The shm domain must be open.
	int register_shm_twin(void *buf, size_t len, uint64_t access, uint64_t key,
			      uint64_t offset, struct fid_mr **twin);

	// rxm's own objects replace util's defaults of the same names.
	int av_open(struct fi_av_attr *attr, struct fid_av **av, void *context);
	int cq_open(struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
	int endpoint(struct fi_info *info, struct fid_ep **ep, void *context);
	int cntr_open(struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context);
	// Registrations are the core's (RxmMr wraps one), not util's MR map.
	int mr_reg(const void *buf, size_t len, uint64_t access, uint64_t offset,
		   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
	int mr_regv(const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		    uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context);
	int mr_regattr(const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr);
	// fi_query_collective (rxm_coll.cpp): barrier, broadcast, allreduce, allgather and
	// scatter; the other collectives -FI_ENOSYS, datatypes or reductions rxm cannot run
	// -FI_EOPNOTSUPP.
	int query_collective(enum fi_collective_op coll, struct fi_collective_attr *attr,
			     uint64_t flags);
	int query_atomic(enum fi_datatype datatype, enum fi_op op, struct fi_atomic_attr *attr,
			 uint64_t flags);

	// Emulated atomics: the target's registrations by key, and the lock that makes the
	// emulated operations of this domain atomic with respect to each other.
	class RxmMr *find_mr(uint64_t key);
	void forget_mr(class RxmMr *mr);
	std::mutex &atomic_lock() { return atomic_lock_; }

private:
	struct InfoDeleter {
		void operator()(struct fi_info *info) const { fi_freeinfo(info); }
	};
	struct CoreCloser {
		void operator()(struct fid_domain *core) const { fi_close(&core->fid); }
	};
	struct FabricCloser {
		void operator()(struct fid_fabric *fabric) const { fi_close(&fabric->fid); }
	};
	int twin_registered_mrs(); // under mr_lock_, once the shm domain opened
	int close_shm_domain();

	RxmFabric &rxm_fabric_;
	std::unique_ptr<struct fi_info, InfoDeleter> core_info_;
	std::unique_ptr<struct fid_domain, CoreCloser> core_;
	bool rma_capable_;
	struct ofi_flow_ctrl_ops *flow_ctrl_ = nullptr;
	std::atomic<bool> bind_refusal_logged_{false};
	std::atomic<bool> core_refuses_bind_flag_{false}; // OFI_MR_BIND_TO_EP: -FI_EBADFLAGS
	std::atomic<bool> core_refuses_send_invalidate_{false}; // OFI_SEND_INVALIDATE: the same
	struct ofi_rx_hold_ops *rx_hold_ = nullptr;
	struct ofi_quiet_ops *quiet_ = nullptr;
	bool core_holds_more_ = false;
	struct ofi_rx_place_ops *rx_place_ = nullptr;
	struct ofi_rx_inplace_ops *rx_inplace_ = nullptr;
	// Guards mrs_ and the opening of the shm domain (an MR registered meanwhile gets its
	// twin either from mr_regattr or from twin_registered_mrs, never from both or neither).
	std::mutex mr_lock_;
	std::unordered_map<uint64_t, class RxmMr *> mrs_;
	std::unique_ptr<struct fi_info, InfoDeleter> shm_info_;
	std::unique_ptr<struct fid_fabric, FabricCloser> shm_fabric_;
	std::unique_ptr<struct fid_domain, CoreCloser> shm_domain_;
	int shm_open_error_ = 0;
	std::mutex atomic_lock_;
};

// Memory registered through rxm: a core registration the peer's connection can use.
// fi_mr_desc gives this object's fid_mr, so descriptors handed back are checked.
class RxmMr : public util::FidStorage<fid_mr>, public util::FidObject {
public:
	RxmMr(RxmDomain *domain, struct fid_mr *core, const struct fi_mr_attr &attr);
	int close() override;
	struct fid_mr *pub() { return &embedded_fid.pub; }
	struct fid_mr *core() const { return core_; }
	void *core_desc() const { return fi_mr_desc(core_); }
	// Its twin in the domain's shm domain (nullptr: none, no remote access or no shm yet).
	struct fid_mr *shm_twin() const { return shm_twin_; }
	void set_shm_twin(struct fid_mr *twin) { shm_twin_ = twin; }
	uint64_t offset() const { return offset_; }

	// Recovers an RxmMr from an application descriptor (nullptr if it is not one).
	static RxmMr *from_desc(void *desc);

	// The registered range (single-iov registrations; others are not atomic targets).
	uint8_t *base() const { return base_; }
	size_t length() const { return length_; }
	uint64_t access() const { return access_; }
	// Whether the registration grants every access bit in 'need' (multi-iov ones: unknown, no).
	bool grants(uint64_t need) const { return (access_ & need) == need; }
	// Whether a peer may reach it (no access bits means every access, fi_mr(3)).
	bool grants_remote() const
	{
		return !access_ || (access_ & (FI_REMOTE_READ | FI_REMOTE_WRITE));
	}

private:
	RxmDomain *domain_;
	struct fid_mr *core_;
	uint8_t *base_ = nullptr;
	size_t length_ = 0;
	uint64_t access_ = 0;
	uint64_t offset_ = 0;
	struct fid_mr *shm_twin_ = nullptr;
};

} // namespace rxm

#endif
