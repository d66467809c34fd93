#include "prov/verbs/verbs_domain.h"

#include <cerrno>
#include <cstring>
#include <memory>

#include <rdma/rdma_cma.h>

#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/verbs/verbs_fabric.h"
#include "prov/verbs/verbs_mr.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/verbs/verbs_srx.h"
#include "prov/util/error.h"
#include "prov/util/flow_ctrl_ops.h"
#include "prov/util/ops_tables.h"

namespace verbs {

namespace {

// The device is found by name: a domain needs one.
const struct fi_info *checked_info(const struct fi_info *info)
{
	if (!info || !info->domain_attr || !info->domain_attr->name)
		throw util::Error(-FI_EINVAL);
	return info;
}

} // namespace

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsDomain>().ops_open);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsDomain>().bind);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().cq_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().endpoint);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().endpoint2);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().srx_ctx);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().cntr_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().av_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().poll_open);
UTIL_ASSERT_IMPLEMENTED(util::make_mr_ops<VerbsDomain>().reg);
UTIL_ASSERT_IMPLEMENTED(util::make_mr_ops<VerbsDomain>().regv);
UTIL_ASSERT_IMPLEMENTED(util::make_mr_ops<VerbsDomain>().regattr);

void VerbsDomain::DeviceListDeleter::operator()(struct ibv_context **list) const
{
	rdma_free_devices(list);
}

// The device progresses data by itself (FI_PROGRESS_AUTO in verbs's domain_attr): util must
// not start an engine thread, which would only wake up to find nothing to do.
VerbsDomain::VerbsDomain(VerbsFabric &fabric, const struct fi_info *info, void *context)
	: util::Domain(fabric, checked_info(info), context, AutoProgress::provider)
{
	// The device context must be rdma_cm's own: QPs are created on CM ids, whose
	// ->verbs is that context, and the PD has to belong to the same one.
	int count = 0;
	device_list_.reset(rdma_get_devices(&count));
	const char *name = this->info()->domain_attr->name;
	for (int i = 0; device_list_ && i < count; i++) {
		if (std::strcmp(ibv_get_device_name(device_list_.get()[i]->device), name) == 0)
			context_ = device_list_.get()[i];
	}
	if (!context_) {
		VERBS_WARN(FI_LOG_DOMAIN, "no RDMA device named %s\n", name);
		throw util::Error(-FI_ENODEV);
	}
	if (ibv_query_device(context_, &device_attr_) != 0)
		throw util::Error(errno ? -errno : -FI_EIO);
	windows_usable_ = params().use_mw && !params().use_odp && device_attr_.max_mw > 0 &&
			  (device_attr_.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	pd_.reset(ibv_alloc_pd(context_));
	if (!pd_) {
		VERBS_WARN(FI_LOG_DOMAIN, "ibv_alloc_pd failed: %s\n", strerror(errno));
		throw util::Error(-FI_ENOMEM);
	}
	if (windows_usable_)
		windows_ = std::make_unique<WindowPool>(pd_.get());
	install_ops<VerbsDomain>();
}

void *VerbsDomain::Registrar::reg(void *addr, size_t len, uint64_t access, int *err) noexcept
{
	int ibv = VerbsMemoryRegion::ibv_access_for(access);
	// Any cached registration may later carry a window (verbs_mr.cpp).
	if (domain_.windows_usable())
		ibv |= IBV_ACCESS_MW_BIND;
	struct ibv_mr *mr = ibv_reg_mr(domain_.pd(), addr, len, ibv);
	if (!mr) {
		int e = errno ? errno : ENOMEM;
		VERBS_WARN(FI_LOG_MR, "ibv_reg_mr(%p, %zu) failed: %s\n", addr, len, strerror(e));
		*err = -e;
	}
	return mr;
}

void VerbsDomain::Registrar::dereg(void *handle) noexcept
{
	ibv_dereg_mr(static_cast<struct ibv_mr *>(handle));
}

util::MrCache *VerbsDomain::mr_cache()
{
	std::call_once(mr_cache_once_, [this] {
		if (params().use_odp) // ODP registrations follow the pages by themselves
			return;
		try {
			auto cache = std::make_unique<util::MrCache>(
				registrar_, util::MrCacheLimits::from_params());
			if (!cache->caching()) {
				VERBS_INFO(FI_LOG_MR, "no MR cache (no userfaultfd, or disabled): "
						      "every registration is made per use\n");
				return;
			}
			mr_cache_ = std::move(cache);
		} catch (...) {
		}
	});
	return mr_cache_.get();
}

const char *VerbsDomain::prov_strerror(int prov_errno, const void *, char *buf, size_t len)
{
	const char *text = ibv_wc_status_str(static_cast<enum ibv_wc_status>(prov_errno));
	if (buf && len) {
		std::strncpy(buf, text, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return text;
}

int VerbsDomain::cntr_open(struct fi_cntr_attr *, struct fid_cntr **, void *)
{
	return -FI_ENOSYS;
}

int VerbsDomain::av_open(struct fi_av_attr *, struct fid_av **, void *)
{
	return -FI_ENOSYS;
}

int VerbsDomain::poll_open(struct fi_poll_attr *, struct fid_poll **)
{
	return -FI_ENOSYS;
}

int VerbsDomain::bind(struct fid *, uint64_t)
{
	return -FI_ENOSYS;
}

int VerbsDomain::ops_open(const char *name, uint64_t flags, void **ops, void *context)
{
	(void)context;
	if (!name || !ops)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (std::strcmp(name, OFI_FLOW_CTRL_OPS_NAME) != 0)
		return -FI_ENOSYS;
	*ops = VerbsEndpoint::flow_ctrl_ops();
	return 0;
}

int VerbsDomain::cq_open(struct fi_cq_attr *attr, struct fid_cq **cq, void *context)
{
	if (!attr || !cq)
		return -FI_EINVAL;
	struct fi_cq_attr checked = VerbsCompletionQueue::checked_attr(*attr, device_attr_);
	auto object = std::make_unique<VerbsCompletionQueue>(*this, checked, context);
	*cq = object.release()->cq_fid();
	return 0;
}

int VerbsDomain::srx_context(struct fi_rx_attr *attr, struct fid_ep **srx, void *context)
{
	return VerbsSharedRx::open(this, attr, srx, context);
}

int VerbsDomain::endpoint(struct fi_info *info, struct fid_ep **ep, void *context)
{
	if (!info || !ep)
		return -FI_EINVAL;
	auto object = std::make_unique<VerbsEndpoint>(*this, info, context);
	*ep = object.release()->ep_fid();
	return 0;
}

int VerbsDomain::endpoint2(struct fi_info *info, struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return endpoint(info, ep, context);
}

int VerbsDomain::mr_reg(const void *buf, size_t len, uint64_t access, uint64_t offset,
			uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = {const_cast<void *>(buf), len};
	return mr_regv(&iov, 1, access, offset, requested_key, flags, mr, context);
}

int VerbsDomain::mr_regv(const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
			 uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr {};
	attr.mr_iov = iov;
	attr.iov_count = count;
	attr.access = access;
	attr.offset = offset;
	attr.requested_key = requested_key;
	attr.context = context;
	attr.iface = FI_HMEM_SYSTEM;
	return mr_regattr(&attr, flags, mr);
}

int VerbsDomain::mr_regattr(const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr)
{
	if (!attr || !mr)
		return -FI_EINVAL;
	auto region = std::make_unique<VerbsMemoryRegion>(*this, *attr, flags);
	*mr = region.release()->mr_fid();
	report_registration(*mr, attr->context);
	return 0;
}

} // namespace verbs
