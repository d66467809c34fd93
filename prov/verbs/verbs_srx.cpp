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

namespace verbs {
namespace {

constexpr uint64_t kRecvFlags = FI_COMPLETION | FI_MORE;

int srx_control(struct fid *fid, int command, void *) noexcept
{
	if (!VerbsSharedRx::from_fid(fid))
		return -FI_EINVAL;
	// Nothing to switch on: the SRQ takes receives from the moment it exists.
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

struct fi_ops *srx_fi_ops()
{
	static struct fi_ops ops = [] {
		struct fi_ops o {};
		o.size = sizeof(o);
		o.close = Op<&VerbsSharedRx::close>::call;
		VERBS_UNSUPPORTED(o, bind);
		o.control = srx_control;
		VERBS_UNSUPPORTED(o, ops_open);
		VERBS_UNSUPPORTED(o, tostr);
		VERBS_UNSUPPORTED(o, ops_set);
		return o;
	}();
	return &ops;
}

struct fi_ops_ep *srx_ep_ops()
{
	static struct fi_ops_ep ops = [] {
		struct fi_ops_ep o {};
		o.size = sizeof(o);
		VERBS_UNSUPPORTED(o, cancel);
		o.getopt = Op<&VerbsSharedRx::getopt>::call;
		o.setopt = Op<&VerbsSharedRx::setopt>::call;
		VERBS_UNSUPPORTED(o, tx_ctx);
		VERBS_UNSUPPORTED(o, rx_ctx);
		o.rx_size_left = Op<&VerbsSharedRx::rx_size_left>::call;
		VERBS_UNSUPPORTED(o, tx_size_left);
		return o;
	}();
	return &ops;
}

struct fi_ops_msg *srx_msg_ops()
{
	static struct fi_ops_msg ops = [] {
		struct fi_ops_msg o {};
		o.size = sizeof(o);
		o.recv = Op<&VerbsSharedRx::recv>::call;
		o.recvv = Op<&VerbsSharedRx::recvv>::call;
		o.recvmsg = Op<&VerbsSharedRx::recvmsg>::call;
		VERBS_UNSUPPORTED(o, send);
		VERBS_UNSUPPORTED(o, sendv);
		VERBS_UNSUPPORTED(o, sendmsg);
		VERBS_UNSUPPORTED(o, inject);
		VERBS_UNSUPPORTED(o, senddata);
		VERBS_UNSUPPORTED(o, injectdata);
		return o;
	}();
	return &ops;
}

struct fi_ops_rma *srx_rma_ops()
{
	static struct fi_ops_rma ops = [] {
		struct fi_ops_rma o {};
		o.size = sizeof(o);
		VERBS_UNSUPPORTED(o, read);
		VERBS_UNSUPPORTED(o, readv);
		VERBS_UNSUPPORTED(o, readmsg);
		VERBS_UNSUPPORTED(o, write);
		VERBS_UNSUPPORTED(o, writev);
		VERBS_UNSUPPORTED(o, writemsg);
		VERBS_UNSUPPORTED(o, inject);
		VERBS_UNSUPPORTED(o, writedata);
		VERBS_UNSUPPORTED(o, injectdata);
		return o;
	}();
	return &ops;
}

struct fi_ops_cm *srx_cm_ops()
{
	static struct fi_ops_cm ops = [] {
		struct fi_ops_cm o {};
		o.size = sizeof(o);
		VERBS_UNSUPPORTED(o, setname);
		VERBS_UNSUPPORTED(o, getname);
		VERBS_UNSUPPORTED(o, getpeer);
		VERBS_UNSUPPORTED(o, connect);
		VERBS_UNSUPPORTED(o, listen);
		VERBS_UNSUPPORTED(o, accept);
		VERBS_UNSUPPORTED(o, reject);
		VERBS_UNSUPPORTED(o, shutdown);
		VERBS_UNSUPPORTED(o, join);
		return o;
	}();
	return &ops;
}

size_t clamp(size_t wanted, size_t fallback, size_t device_max)
{
	return std::max<size_t>(1, std::min(wanted ? wanted : fallback, device_max));
}

} // namespace

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
	auto *self = new VerbsSharedRx(domain, size);
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
	self->fid_.init(self, FI_CLASS_SRX_CTX, context, srx_fi_ops());
	self->fid_.pub.ops = srx_ep_ops();
	self->fid_.pub.msg = srx_msg_ops();
	self->fid_.pub.rma = srx_rma_ops();
	self->fid_.pub.cm = srx_cm_ops();
	self->fid_.pub.tagged = ep_tagged_ops();
	self->fid_.pub.atomic = ep_atomic_ops();
	self->fid_.pub.collective = ep_collective_ops();
	domain->children++;
	*srx = &self->fid_.pub;
	return 0;
}

int VerbsSharedRx::close()
{
	if (bound_endpoints.load() > 0)
		return -FI_EBUSY;
	closing_ = true;
	// With no QP attached, the receives still posted can never complete: the SRQ and the
	// slots go together. Completions of closed endpoints were polled when they closed.
	if (ibv_destroy_srq(srq_) != 0) {
		closing_ = false;
		return -FI_EBUSY;
	}
	domain_->children--;
	fid_.invalidate();
	delete this;
	return 0;
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
