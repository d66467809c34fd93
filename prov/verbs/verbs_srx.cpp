// Shared receive context on an ibv SRQ: receives posted here are consumed by whichever
// bound endpoint's QP a message arrives on; the completion goes to that endpoint's receive
// CQ and the slot comes back here (VerbsRequest::owner).
#include "prov/verbs/verbs_srx.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/verbs/verbs_mr.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/util/ops_tables.h"

namespace verbs {
namespace {

constexpr uint64_t kRecvFlags = FI_COMPLETION | FI_MORE;

size_t clamp(size_t wanted, size_t fallback, size_t device_max)
{
	return std::max<size_t>(1, std::min(wanted ? wanted : fallback, device_max));
}

} // namespace

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsSharedRx>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsSharedRx>().control);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<VerbsSharedRx>().getopt);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<VerbsSharedRx>().setopt);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<VerbsSharedRx>().rx_size_left);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<VerbsSharedRx>().recv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<VerbsSharedRx>().recvv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<VerbsSharedRx>().recvmsg);

VerbsSharedRx::VerbsSharedRx(VerbsDomain *domain, size_t size, void *context)
	: util::FidObject(embedded_fid, FI_CLASS_SRX_CTX, context), domain_(domain),
	  pool_(size, this, true)
{
	using Self = VerbsSharedRx;
	fid_ep &pub = embedded_fid.pub;
	pub.fid.ops = util::ops_ptr<Self, util::make_fi_ops<Self>>();
	pub.ops = util::ops_ptr<Self, util::make_ep_ops<Self>>();
	pub.cm = util::ops_ptr<Self, util::make_cm_ops<Self>>();
	pub.msg = util::ops_ptr<Self, util::make_msg_ops<Self>>();
	pub.rma = util::ops_ptr<Self, util::make_rma_ops<Self>>();
	pub.tagged = util::ops_ptr<Self, util::make_tagged_ops<Self>>();
	pub.atomic = util::ops_ptr<Self, util::make_atomic_ops<Self>>();
	pub.collective = util::ops_ptr<Self, util::make_collective_ops<Self>>();
}

int VerbsSharedRx::open(VerbsDomain *domain, struct fi_rx_attr *attr, struct fid_ep **srx,
			void *context)
{
	if (!srx)
		return -FI_EINVAL;
	const struct ibv_device_attr &dev = domain->device_attr();
	if (dev.max_srq <= 0 || dev.max_srq_wr <= 0 || dev.max_srq_sge <= 0)
		return -FI_ENOSYS; // the device has no SRQs
	if (attr && (attr->caps & ~static_cast<uint64_t>(FI_MSG | FI_RECV)))
		return -FI_EINVAL; // receives of plain messages are all an SRQ does
	const Params &p = params();
	size_t size = clamp(attr ? attr->size : 0, p.rx_size, static_cast<size_t>(dev.max_srq_wr));
	size_t max_sge = std::min(kMaxSge, static_cast<size_t>(dev.max_srq_sge));
	auto *self = new VerbsSharedRx(domain, size, context);
	self->iov_limit_ = clamp(attr ? attr->iov_limit : 0, p.rx_iov_limit, max_sge);
	self->op_flags_ = attr ? attr->op_flags : 0;
	if (const struct fi_info *info = domain->info())
		if (info->ep_attr && info->ep_attr->max_msg_size)
			self->max_msg_size_ = info->ep_attr->max_msg_size;
	struct ibv_srq_init_attr init {};
	init.attr.max_wr = static_cast<uint32_t>(size);
	init.attr.max_sge = static_cast<uint32_t>(self->iov_limit_);
	self->srq_ = ibv_create_srq(domain->pd(), &init);
	if (!self->srq_) {
		int err = errno;
		VERBS_WARN(FI_LOG_EP_CTRL, "ibv_create_srq failed: %s\n", strerror(err));
		delete self;
		return err ? -err : -FI_EOTHER;
	}
	domain->ref();
	*srx = &self->embedded_fid.pub;
	return 0;
}

int VerbsSharedRx::close()
{
	if (busy())
		return -FI_EBUSY;
	closing_ = true;
	// With no QP attached, the receives still posted can never complete: the SRQ and the
	// slots go together. Completions of closed endpoints were polled when they closed.
	if (ibv_destroy_srq(srq_) != 0) {
		closing_ = false;
		return -FI_EBUSY;
	}
	domain_->unref();
	return util::FidObject::close();
}

int VerbsSharedRx::control(int command, void *)
{
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

int VerbsSharedRx::getopt(int, int, void *, size_t *)
{
	return -FI_ENOPROTOOPT;
}

int VerbsSharedRx::setopt(int, int, const void *, size_t)
{
	return -FI_ENOPROTOOPT;
}

ssize_t VerbsSharedRx::rx_size_left()
{
	return static_cast<ssize_t>(pool_.available());
}

ssize_t VerbsSharedRx::post(const struct iovec *iov, void **desc, size_t count, void *context,
			    uint64_t flags)
{
	if (count > iov_limit_ || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~kRecvFlags)
		return -FI_EBADFLAGS;
	VerbsRequest *request = pool_.acquire();
	if (!request)
		return -FI_EAGAIN;
	int num_sge = 0;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len == 0)
			continue;
		VerbsMemoryRegion *mr = desc ? VerbsMemoryRegion::from_desc(desc[i]) : nullptr;
		if (iov[i].iov_len > max_msg_size_ || !mr || mr->domain() != domain_ ||
		    !mr->covers(iov[i].iov_base, iov[i].iov_len)) {
			pool_.release(request);
			return -FI_EINVAL;
		}
		request->sge[num_sge].addr = reinterpret_cast<uintptr_t>(iov[i].iov_base);
		request->sge[num_sge].length = static_cast<uint32_t>(iov[i].iov_len);
		request->sge[num_sge].lkey = mr->lkey();
		num_sge++;
	}
	request->context = context;
	request->flags = FI_RECV | FI_MSG;
	request->report = true; // an SRX has no CQ binding of its own, hence no selective mode
	request->buf = count ? iov[0].iov_base : nullptr;
	request->num_sge = num_sge;
	struct ibv_recv_wr wr {};
	struct ibv_recv_wr *bad = nullptr;
	wr.wr_id = reinterpret_cast<uint64_t>(request);
	wr.sg_list = request->sge;
	wr.num_sge = num_sge;
	if (int err = ibv_post_srq_recv(srq_, &wr, &bad)) {
		pool_.release(request);
		return err == ENOMEM ? -FI_EAGAIN : -err;
	}
	return 0;
}

ssize_t VerbsSharedRx::recv(void *buf, size_t len, void *desc, fi_addr_t, void *context)
{
	struct iovec iov {buf, len};
	return post(&iov, &desc, 1, context, op_flags_ & kRecvFlags);
}

ssize_t VerbsSharedRx::recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t,
			     void *context)
{
	return post(iov, desc, count, context, op_flags_ & kRecvFlags);
}

ssize_t VerbsSharedRx::recvmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post(msg->msg_iov, msg->desc, msg->iov_count, msg->context, flags);
}

} // namespace verbs
