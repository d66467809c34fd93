// RxmDomain and RxmMr.
#include "prov/rxm/rxm_domain.h"

#include "prov/rxm/rxm_atomic_exec.h"
#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_cntr.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_fabric.h"
#include "prov/rxm/rxm_info.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/util/error.h"
#include "prov/util/ops_tables.h"
#include "prov/util/mr_bind_flag.h"
#include "prov/util/random_key.h"

#include <rdma/fi_atomic.h>
#include <rdma/fi_errno.h>

#include <memory>
#include <new>

namespace rxm {

bool lower_domains_need_no_lock(const struct fi_info *info)
{
	const fi_domain_attr *d = info ? info->domain_attr : nullptr;
	return d && d->threading == FI_THREAD_DOMAIN && d->data_progress != FI_PROGRESS_AUTO &&
	       !params().data_auto_progress;
}

namespace {

struct fi_info *checked_core_info(const struct fi_info *info)
{
	fi_info *core_info = core_info_for(info);
	if (!core_info) {
		RXM_WARN(FI_LOG_DOMAIN, "no core MSG provider for %s\n",
			 info->fabric_attr ? info->fabric_attr->prov_name : "(null)");
		throw util::Error(-FI_ENODATA);
	}
	return core_info;
}

struct fid_domain *open_core_domain(RxmFabric &fabric, struct fi_info *core_info,
				     const struct fi_info *info)
{
	if (lower_domains_need_no_lock(info))
		core_info->domain_attr->threading = FI_THREAD_DOMAIN;
	struct fid_domain *core = nullptr;
	int ret = fi_domain(fabric.core(), core_info, &core, nullptr);
	if (ret) {
		RXM_WARN(FI_LOG_DOMAIN, "core fi_domain: %s\n", fi_strerror(-ret));
		throw util::Error(ret);
	}
	return core;
}

template <class Ops>
Ops *core_ops(struct fid_domain *core, const char *name)
{
	void *ops = nullptr;
	if (fi_open_ops(&core->fid, name, 0, &ops, nullptr) == 0 && ops &&
	    static_cast<Ops *>(ops)->size >= sizeof(Ops))
		return static_cast<Ops *>(ops);
	return nullptr;
}

} // namespace

// Auto progress is rxm's own thread per enabled endpoint (RxmEndpoint), which polls the
// core's queues; util's engine thread would have no fd or source to serve.
RxmDomain::RxmDomain(RxmFabric &fabric, const struct fi_info *info, void *context)
	: util::Domain(fabric, info, context, AutoProgress::provider), rxm_fabric_(fabric),
	  core_info_(checked_core_info(info)),
	  core_(open_core_domain(fabric, core_info_.get(), info)),
	  rma_capable_(core_has_rma(core_info_.get())),
	  flow_ctrl_(core_ops<ofi_flow_ctrl_ops>(core_.get(), OFI_FLOW_CTRL_OPS_NAME)),
	  rx_hold_(core_ops<ofi_rx_hold_ops>(core_.get(), OFI_RX_HOLD_OPS_NAME)),
	  quiet_(core_ops<ofi_quiet_ops>(core_.get(), OFI_QUIET_OPS_NAME)),
	  rx_place_(core_ops<ofi_rx_place_ops>(core_.get(), OFI_RX_PLACE_OPS_NAME)),
	  rx_inplace_(core_ops<ofi_rx_inplace_ops>(core_.get(), OFI_RX_INPLACE_OPS_NAME))
{
	// rxm marks with FI_MORE the sends its application will come back for (bursts it
	// wants coalesced); any other send of its core must leave at once (send_hold_ops.h).
	if (auto *hold = core_ops<ofi_send_hold_ops>(core_.get(), OFI_SEND_HOLD_OPS_NAME))
		core_holds_more_ = hold->hold_only_more(core_.get()) == 0;
	install_ops<RxmDomain>();
}

int RxmDomain::close()
{
	if (busy())
		return -FI_EBUSY;
	// A core refusing to close (objects of its own still open) keeps the domain open, so
	// the application can retry.
	int ret = close_shm_domain();
	if (ret)
		return ret;
	ret = fi_close(&core_->fid);
	if (ret)
		return ret;
	core_.release();
	return util::Domain::close();
}

bool RxmDomain::core_needs_local_mr() const
{
	int mode = core_info_->domain_attr->mr_mode;
	return (mode & FI_MR_LOCAL) || mode == FI_MR_BASIC;
}

bool RxmDomain::core_uses_virt_addr() const
{
	int mode = core_info_->domain_attr->mr_mode;
	return (mode & FI_MR_VIRT_ADDR) || mode == FI_MR_BASIC;
}

int RxmDomain::register_internal(void *buf, size_t len, uint64_t access, struct fid_mr **mr)
{
	uint64_t flags = access == FI_REMOTE_READ &&
				 !core_refuses_bind_flag_.load(std::memory_order_relaxed)
			 ? OFI_MR_BIND_TO_EP
			 : 0;
	int ret = -FI_ENOKEY;
	for (int attempt = 0; attempt < 8 && ret == -FI_ENOKEY; attempt++) {
		ret = fi_mr_reg(core_.get(), buf, len, access, 0, util::random_key(), flags, mr,
				nullptr);
		if (ret == -FI_EBADFLAGS && flags) {
			core_refuses_bind_flag_.store(true, std::memory_order_relaxed);
			flags = 0;
			ret = -FI_ENOKEY; // once more, without it
		}
	}
	return ret;
}

int RxmDomain::bind_internal(struct fid_mr *mr, struct fid_ep *core_ep, bool *bound)
{
	if (bound)
		*bound = false;
	if (!core_ep)
		return -FI_ENOTCONN;
	int ret = fi_mr_bind(mr, &core_ep->fid, 0);
	if (ret == -FI_EALREADY)
		return 0;
	if (ret == 0)
		ret = fi_mr_enable(mr);
	if (ret == 0 && bound)
		*bound = true;
	if (ret == -FI_EAGAIN)
		return ret;
	if (ret && !bind_refusal_logged_.exchange(true))
		RXM_INFO(FI_LOG_MR,
			 "core refuses binding registrations to an endpoint (%s): rendezvous "
			 "buffers are reachable over any connection that knows their key\n",
			 fi_strerror(-ret));
	return 0;
}

RxmMr *RxmDomain::find_mr(uint64_t key)
{
	std::lock_guard guard(mr_lock_);
	auto it = mrs_.find(key);
	return it == mrs_.end() ? nullptr : it->second;
}

void RxmDomain::forget_mr(RxmMr *mr)
{
	std::lock_guard guard(mr_lock_);
	auto it = mrs_.find(fi_mr_key(mr->core()));
	if (it != mrs_.end() && it->second == mr)
		mrs_.erase(it);
}

int RxmDomain::query_atomic(enum fi_datatype datatype, enum fi_op op, struct fi_atomic_attr *attr,
			    uint64_t flags)
{
	if (!attr)
		return -FI_EINVAL;
	if (flags & ~(FI_FETCH_ATOMIC | FI_COMPARE_ATOMIC | FI_TAGGED))
		return -FI_EBADFLAGS;
	AtomicKind kind = (flags & FI_COMPARE_ATOMIC) ? AtomicKind::compare
			  : (flags & FI_FETCH_ATOMIC)  ? AtomicKind::fetch
						       : AtomicKind::write;
	if (!atomic_supported(static_cast<uint8_t>(op), static_cast<uint8_t>(datatype), kind))
		return -FI_EOPNOTSUPP;
	attr->size = atomic_datatype_size(static_cast<uint8_t>(datatype));
	attr->count = atomic_max_count(static_cast<uint8_t>(datatype), kind, params().buffer_size);
	return 0;
}

UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<RxmDomain>().av_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<RxmDomain>().cq_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<RxmDomain>().endpoint);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<RxmDomain>().cntr_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<RxmDomain>().query_atomic);
UTIL_ASSERT_IMPLEMENTED(util::make_mr_ops<RxmDomain>().regattr);

int RxmDomain::av_open(struct fi_av_attr *attr, struct fid_av **av, void *context)
{
	if (!attr || !av)
		return -FI_EINVAL;
	auto object = std::make_unique<RxmAv>(*this, attr, context);
	*av = object.release()->av_fid();
	return 0;
}

int RxmDomain::cq_open(struct fi_cq_attr *attr, struct fid_cq **cq, void *context)
{
	if (!attr || !cq)
		return -FI_EINVAL;
	auto object = std::make_unique<RxmCq>(*this, attr, context);
	*cq = object.release()->cq_fid();
	return 0;
}

int RxmDomain::cntr_open(struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context)
{
	if (!cntr)
		return -FI_EINVAL;
	auto object = std::make_unique<RxmCntr>(*this, attr, context);
	*cntr = object.release()->cntr_fid();
	return 0;
}

int RxmDomain::endpoint(struct fi_info *info, struct fid_ep **ep, void *context)
{
	return RxmEndpoint::open(this, info, ep, context);
}

int RxmDomain::mr_regattr(const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr)
{
	if (!attr || !mr)
		return -FI_EINVAL;
	struct fid_mr *core = nullptr;
	int ret = fi_mr_regattr(core_.get(), attr, flags, &core);
	if (ret)
		return ret;
	RxmMr *m = new (std::nothrow) RxmMr(this, core, *attr);
	if (!m) {
		fi_close(&core->fid);
		return -FI_ENOMEM;
	}
	if (attr->iov_count == 1) {
		std::unique_lock guard(mr_lock_);
		// Reachable over the core, so over shm too once there is a shm side.
		if (shm_domain_ && m->grants_remote()) {
			struct fid_mr *twin = nullptr;
			ret = register_shm_twin(m->base(), m->length(), m->access(), core->key,
						m->offset(), &twin);
			if (ret) {
				guard.unlock(); // close() forgets it under the same lock
				m->close();
				return ret;
			}
			m->set_shm_twin(twin);
		}
		mrs_[core->key] = m;
	}
	*mr = m->pub();
	report_registration(*mr, attr->context);
	return 0;
}

int RxmDomain::mr_regv(const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		       uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	fi_mr_attr attr{};
	attr.mr_iov = iov;
	attr.iov_count = count;
	attr.access = access;
	attr.offset = offset;
	attr.requested_key = requested_key;
	attr.context = context;
	return mr_regattr(&attr, flags, mr);
}

int RxmDomain::mr_reg(const void *buf, size_t len, uint64_t access, uint64_t offset,
		      uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return mr_regv(&iov, 1, access, offset, requested_key, flags, mr, context);
}

RxmMr::RxmMr(RxmDomain *domain, struct fid_mr *core, const struct fi_mr_attr &attr)
	: FidObject(embedded_fid, FI_CLASS_MR, attr.context), domain_(domain), core_(core)
{
	if (attr.iov_count == 1 && attr.mr_iov) {
		base_ = static_cast<uint8_t *>(attr.mr_iov[0].iov_base);
		length_ = attr.mr_iov[0].iov_len;
		access_ = attr.access;
		offset_ = attr.offset;
	}
	embedded_fid.pub.fid.ops = util::ops_ptr<RxmMr, util::make_fi_ops<RxmMr>>();
	embedded_fid.pub.mem_desc = &embedded_fid.pub;
	embedded_fid.pub.key = core->key;
	domain_->ref();
}

int RxmMr::close()
{
	if (busy())
		return -FI_EBUSY;
	{
		// Emulated atomics look the region up and apply under this lock (rxm_atomic.cpp).
		std::lock_guard guard(domain_->atomic_lock());
		domain_->forget_mr(this);
	}
	// The twin first: once this returns, no peer reaches the memory over either path.
	if (shm_twin_) {
		int ret = fi_close(&shm_twin_->fid);
		if (ret)
			return ret;
		shm_twin_ = nullptr;
	}
	int ret = fi_close(&core_->fid);
	if (ret)
		return ret;
	domain_->unref();
	return FidObject::close();
}

RxmMr *RxmMr::from_desc(void *desc)
{
	return util::fid_cast<RxmMr>(static_cast<struct fid *>(desc), FI_CLASS_MR);
}

} // namespace rxm
