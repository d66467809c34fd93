#include "prov/verbs/verbs_domain.h"

#include <cstring>

#include <rdma/rdma_cma.h>

#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/verbs/verbs_fabric.h"
#include "prov/verbs/verbs_mr.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/verbs/verbs_srx.h"
#include "prov/util/flow_ctrl_ops.h"
#include "prov/util/ops_tables.h"

namespace verbs {

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsDomain>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsDomain>().ops_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().cq_open);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().endpoint);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().endpoint2);
UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<VerbsDomain>().srx_ctx);
UTIL_ASSERT_IMPLEMENTED(util::make_mr_ops<VerbsDomain>().reg);
UTIL_ASSERT_IMPLEMENTED(util::make_mr_ops<VerbsDomain>().regv);
UTIL_ASSERT_IMPLEMENTED(util::make_mr_ops<VerbsDomain>().regattr);

VerbsDomain::VerbsDomain(VerbsFabric *fabric, void *context)
	: util::FidObject(embedded_fid, FI_CLASS_DOMAIN, context), fabric_(fabric)
{
	fid_domain &pub = embedded_fid.pub;
	pub.fid.ops = util::ops_ptr<VerbsDomain, util::make_fi_ops<VerbsDomain>>();
	pub.ops = util::ops_ptr<VerbsDomain, util::make_domain_ops<VerbsDomain>>();
	pub.mr = util::ops_ptr<VerbsDomain, util::make_mr_ops<VerbsDomain>>();
}

int VerbsDomain::open(VerbsFabric *fabric, struct fi_info *info, struct fid_domain **domain,
		      void *context)
{
	if (!info || !domain || !info->domain_attr || !info->domain_attr->name)
		return -FI_EINVAL;
	auto *self = new VerbsDomain(fabric, context);

	// The device context must be rdma_cm's own: QPs are created on CM ids, whose
	// ->verbs is that context, and the PD has to belong to the same one.
	int count = 0;
	self->device_list_ = rdma_get_devices(&count);
	for (int i = 0; self->device_list_ && i < count; i++) {
		if (std::strcmp(ibv_get_device_name(self->device_list_[i]->device),
				info->domain_attr->name) == 0)
			self->context_ = self->device_list_[i];
	}
	int ret = 0;
	if (!self->context_) {
		VERBS_WARN(FI_LOG_DOMAIN, "no RDMA device named %s\n", info->domain_attr->name);
		ret = -FI_ENODEV;
	} else if (ibv_query_device(self->context_, &self->device_attr_) != 0) {
		ret = -errno;
	} else if (!(self->pd_ = ibv_alloc_pd(self->context_))) {
		VERBS_WARN(FI_LOG_DOMAIN, "ibv_alloc_pd failed: %s\n", strerror(errno));
		ret = -FI_ENOMEM;
	} else if (!(self->info_ = fi_dupinfo(info))) {
		ret = -FI_ENOMEM;
	}
	if (ret) {
		delete self;
		return ret;
	}
	fabric->ref();
	*domain = self->domain_fid();
	return 0;
}

VerbsDomain::~VerbsDomain()
{
	if (pd_)
		ibv_dealloc_pd(pd_);
	if (device_list_)
		rdma_free_devices(device_list_);
	fi_freeinfo(info_);
}

uint32_t VerbsDomain::api_version() const
{
	return fabric_->api_version();
}

int VerbsDomain::close()
{
	if (busy())
		return -FI_EBUSY;
	fabric_->unref();
	return util::FidObject::close();
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
	return VerbsCompletionQueue::open(this, attr, cq, context);
}

int VerbsDomain::srx_context(struct fi_rx_attr *attr, struct fid_ep **srx, void *context)
{
	return VerbsSharedRx::open(this, attr, srx, context);
}

int VerbsDomain::endpoint(struct fi_info *info, struct fid_ep **ep, void *context)
{
	return VerbsEndpoint::open(this, info, ep, context);
}

int VerbsDomain::endpoint2(struct fi_info *info, struct fid_ep **ep, uint64_t flags, void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return VerbsEndpoint::open(this, info, ep, context);
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
	return VerbsMemoryRegion::open(this, attr, flags, mr);
}

} // namespace verbs
