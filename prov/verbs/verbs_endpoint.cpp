// Endpoint lifecycle: opening (possibly from a connection request), binding EQ and CQs,
// enabling (creating the QP), options, and an orderly close.
#include "prov/verbs/verbs_endpoint.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "prov/verbs/verbs_cm_data.h"
#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_pep.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/verbs/verbs_srx.h"

namespace verbs {
namespace {

// How long a closing endpoint waits for the flush completions of its posted requests.
constexpr auto kDrainTimeout = std::chrono::seconds(2);

struct fi_ops *ep_fi_ops()
{
	static struct fi_ops ops = [] {
		struct fi_ops o {};
		o.size = sizeof(o);
		o.close = Op<&VerbsEndpoint::close>::call;
		o.bind = Op<&VerbsEndpoint::bind>::call;
		o.control = Op<&VerbsEndpoint::control>::call;
		VERBS_UNSUPPORTED(o, ops_open);
		VERBS_UNSUPPORTED(o, tostr);
		VERBS_UNSUPPORTED(o, ops_set);
		return o;
	}();
	return &ops;
}

struct fi_ops_ep *ep_ops()
{
	static struct fi_ops_ep ops = [] {
		struct fi_ops_ep o {};
		o.size = sizeof(o);
		VERBS_UNSUPPORTED(o, cancel);
		o.getopt = Op<&VerbsEndpoint::getopt>::call;
		o.setopt = Op<&VerbsEndpoint::setopt>::call;
		VERBS_UNSUPPORTED(o, tx_ctx);
		VERBS_UNSUPPORTED(o, rx_ctx);
		o.rx_size_left = Op<&VerbsEndpoint::rx_size_left>::call;
		o.tx_size_left = Op<&VerbsEndpoint::tx_size_left>::call;
		return o;
	}();
	return &ops;
}

struct fi_ops_cm *ep_cm_ops()
{
	static struct fi_ops_cm ops = [] {
		struct fi_ops_cm o {};
		o.size = sizeof(o);
		o.setname = Op<&VerbsEndpoint::setname>::call;
		o.getname = Op<&VerbsEndpoint::getname>::call;
		o.getpeer = Op<&VerbsEndpoint::getpeer>::call;
		o.connect = Op<&VerbsEndpoint::connect>::call;
		VERBS_UNSUPPORTED(o, listen);
		o.accept = Op<&VerbsEndpoint::accept>::call;
		VERBS_UNSUPPORTED(o, reject);
		o.shutdown = Op<&VerbsEndpoint::shutdown>::call;
		VERBS_UNSUPPORTED(o, join);
		return o;
	}();
	return &ops;
}

struct fi_ops_msg *ep_msg_ops()
{
	static struct fi_ops_msg ops = [] {
		struct fi_ops_msg o {};
		o.size = sizeof(o);
		o.recv = Op<&VerbsEndpoint::recv>::call;
		o.recvv = Op<&VerbsEndpoint::recvv>::call;
		o.recvmsg = Op<&VerbsEndpoint::recvmsg>::call;
		o.send = Op<&VerbsEndpoint::send>::call;
		o.sendv = Op<&VerbsEndpoint::sendv>::call;
		o.sendmsg = Op<&VerbsEndpoint::sendmsg>::call;
		o.inject = Op<&VerbsEndpoint::inject>::call;
		o.senddata = Op<&VerbsEndpoint::senddata>::call;
		o.injectdata = Op<&VerbsEndpoint::injectdata>::call;
		return o;
	}();
	return &ops;
}

struct fi_ops_rma *ep_rma_ops()
{
	static struct fi_ops_rma ops = [] {
		struct fi_ops_rma o {};
		o.size = sizeof(o);
		o.read = Op<&VerbsEndpoint::read>::call;
		o.readv = Op<&VerbsEndpoint::readv>::call;
		o.readmsg = Op<&VerbsEndpoint::readmsg>::call;
		o.write = Op<&VerbsEndpoint::write>::call;
		o.writev = Op<&VerbsEndpoint::writev>::call;
		o.writemsg = Op<&VerbsEndpoint::writemsg>::call;
		o.inject = Op<&VerbsEndpoint::inject_write>::call;
		o.writedata = Op<&VerbsEndpoint::writedata>::call;
		o.injectdata = Op<&VerbsEndpoint::inject_writedata>::call;
		return o;
	}();
	return &ops;
}

} // namespace

// Every entry unsupported; shared with VerbsSharedRx (see verbs_endpoint.h).
struct fi_ops_tagged *ep_tagged_ops()
{
	static struct fi_ops_tagged ops = [] {
		struct fi_ops_tagged o {};
		o.size = sizeof(o);
		VERBS_UNSUPPORTED(o, recv);
		VERBS_UNSUPPORTED(o, recvv);
		VERBS_UNSUPPORTED(o, recvmsg);
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

struct fi_ops_atomic *ep_atomic_ops()
{
	static struct fi_ops_atomic ops = [] {
		struct fi_ops_atomic o {};
		o.size = sizeof(o);
		VERBS_UNSUPPORTED(o, write);
		VERBS_UNSUPPORTED(o, writev);
		VERBS_UNSUPPORTED(o, writemsg);
		VERBS_UNSUPPORTED(o, inject);
		VERBS_UNSUPPORTED(o, readwrite);
		VERBS_UNSUPPORTED(o, readwritev);
		VERBS_UNSUPPORTED(o, readwritemsg);
		VERBS_UNSUPPORTED(o, compwrite);
		VERBS_UNSUPPORTED(o, compwritev);
		VERBS_UNSUPPORTED(o, compwritemsg);
		VERBS_UNSUPPORTED(o, writevalid);
		VERBS_UNSUPPORTED(o, readwritevalid);
		VERBS_UNSUPPORTED(o, compwritevalid);
		return o;
	}();
	return &ops;
}

struct fi_ops_collective *ep_collective_ops()
{
	static struct fi_ops_collective ops = [] {
		struct fi_ops_collective o {};
		o.size = sizeof(o);
		VERBS_UNSUPPORTED(o, barrier);
		VERBS_UNSUPPORTED(o, broadcast);
		VERBS_UNSUPPORTED(o, alltoall);
		VERBS_UNSUPPORTED(o, allreduce);
		VERBS_UNSUPPORTED(o, allgather);
		VERBS_UNSUPPORTED(o, reduce_scatter);
		VERBS_UNSUPPORTED(o, reduce);
		VERBS_UNSUPPORTED(o, scatter);
		VERBS_UNSUPPORTED(o, gather);
		VERBS_UNSUPPORTED(o, msg);
		return o;
	}();
	return &ops;
}

namespace {

size_t clamp_size(size_t wanted, size_t fallback, size_t device_max)
{
	return std::max<size_t>(1, std::min(wanted ? wanted : fallback, device_max));
}

} // namespace

VerbsEndpoint::VerbsEndpoint(VerbsDomain *domain, size_t tx_size, size_t rx_size)
	: domain_(domain), tx_size_(tx_size), rx_size_(rx_size), tx_pool_(tx_size, this, false),
	  rx_pool_(rx_size, this, true)
{
	pending_recvs_.reserve(rx_size);
}

int VerbsEndpoint::open(VerbsDomain *domain, struct fi_info *info, struct fid_ep **ep,
			void *context)
{
	if (!info || !ep)
		return -FI_EINVAL;
	if (info->ep_attr && info->ep_attr->type != FI_EP_MSG && info->ep_attr->type != FI_EP_UNSPEC)
		return -FI_EINVAL;
	VerbsConnRequest *request = nullptr;
	if (info->handle) {
		request = VerbsConnRequest::from_fid(info->handle);
		if (!request)
			return -FI_EINVAL;
	}
	const struct ibv_device_attr &dev = domain->device_attr();
	const Params &p = params();
	size_t tx_size = clamp_size(info->tx_attr ? info->tx_attr->size : 0, p.tx_size,
				    static_cast<size_t>(dev.max_qp_wr));
	size_t rx_size = clamp_size(info->rx_attr ? info->rx_attr->size : 0, p.rx_size,
				    static_cast<size_t>(dev.max_qp_wr));
	auto *self = new VerbsEndpoint(domain, tx_size, rx_size);
	self->fid_.init(self, FI_CLASS_EP, context, ep_fi_ops());
	self->fid_.pub.ops = ep_ops();
	self->fid_.pub.cm = ep_cm_ops();
	self->fid_.pub.msg = ep_msg_ops();
	self->fid_.pub.rma = ep_rma_ops();
	self->fid_.pub.tagged = ep_tagged_ops();
	self->fid_.pub.atomic = ep_atomic_ops();
	self->fid_.pub.collective = ep_collective_ops();
	size_t max_sge = std::min(kMaxSge, static_cast<size_t>(dev.max_sge));
	self->tx_iov_limit_ = clamp_size(info->tx_attr ? info->tx_attr->iov_limit : 0,
					 p.tx_iov_limit, max_sge);
	self->rx_iov_limit_ = clamp_size(info->rx_attr ? info->rx_attr->iov_limit : 0,
					 p.rx_iov_limit, max_sge);
	self->inject_size_ = info->tx_attr ? info->tx_attr->inject_size : 0;
	self->tx_op_flags_ = info->tx_attr ? info->tx_attr->op_flags : 0;
	self->rx_op_flags_ = info->rx_attr ? info->rx_attr->op_flags : 0;
	self->max_msg_size_ = info->ep_attr && info->ep_attr->max_msg_size
				      ? info->ep_attr->max_msg_size
				      : (1ULL << 31);
	self->rx_cq_data_mode_ = (info->mode & FI_RX_CQ_DATA) ||
				 (info->rx_attr && (info->rx_attr->mode & FI_RX_CQ_DATA));
	self->info_ = fi_dupinfo(info);
	if (!self->info_) {
		delete self;
		return -FI_ENOMEM;
	}
	if (request) {
		// The request's CM id becomes this endpoint's; it must be on this domain's device.
		self->connreq_responder_resources_ = request->responder_resources();
		self->connreq_initiator_depth_ = request->initiator_depth();
		self->id_ = request->take_id();
		self->connreq_taken_ = true;
		self->id_->context = static_cast<CmEventTarget *>(self);
		self->info_->handle = nullptr;
		info->handle = nullptr;
		if (self->id_->verbs != domain->context()) {
			VERBS_WARN(FI_LOG_EP_CTRL, "connection request arrived on another device\n");
			rdma_reject(self->id_, nullptr, 0);
			delete self;
			return -FI_EINVAL;
		}
	}
	domain->children++;
	*ep = &self->fid_.pub;
	return 0;
}

VerbsEndpoint::~VerbsEndpoint()
{
	if (id_) {
		if (id_->qp)
			rdma_destroy_qp(id_);
		rdma_destroy_id(id_);
	}
	fi_freeinfo(info_);
}

void VerbsEndpoint::release_request(VerbsRequest *request)
{
	(request->is_recv ? rx_pool_ : tx_pool_).release(request);
}

// Every posted request holds a slot of this endpoint; flushing the QP completes them all.
// Waiting for those completions keeps a later CQ poll from touching freed slots.
void VerbsEndpoint::drain_outstanding_requests()
{
	for (VerbsRequest *request : pending_recvs_)
		rx_pool_.release(request);
	pending_recvs_.clear();
	if (!qp_)
		return;
	struct ibv_qp_attr attr {};
	attr.qp_state = IBV_QPS_ERR;
	ibv_modify_qp(qp_, &attr, IBV_QP_STATE);
	auto deadline = std::chrono::steady_clock::now() + kDrainTimeout;
	while (tx_pool_.in_use() + rx_pool_.in_use() > 0 &&
	       std::chrono::steady_clock::now() < deadline) {
		if (tx_cq_)
			tx_cq_->poll_device();
		if (rx_cq_ && rx_cq_ != tx_cq_)
			rx_cq_->poll_device();
		std::this_thread::yield();
	}
}

int VerbsEndpoint::close()
{
	closing_ = true;
	// A CM event being handled now finishes before we take lock_; later ones see closing_.
	VerbsEventQueue *deferred_eq = nullptr;
	{
		std::lock_guard<std::mutex> guard(lock_);
		deferred_eq = deferred_eq_;
	}
	// Not under lock_: the EQ takes its lock, then ours, when it calls settle_deferred.
	if (deferred_eq)
		deferred_eq->forget(this);
	linger_until_peer_answers();
	{
		std::lock_guard<std::mutex> guard(lock_);
		// A connection request taken but never accepted: tell the peer now rather than
		// let it time out.
		if (id_ && state_ == State::Idle && connreq_taken_)
			rdma_reject(id_, nullptr, 0);
		drain_outstanding_requests();
	}
	if (tx_pool_.in_use() + rx_pool_.in_use() > 0) {
		// Completions still owed by the device may name this endpoint's slots: keep the
		// memory rather than risk a use after free.
		VERBS_WARN(FI_LOG_EP_CTRL, "endpoint closed with unflushed requests; leaking it\n");
		if (id_) {
			if (id_->qp)
				rdma_destroy_qp(id_);
			rdma_destroy_id(id_);
			id_ = nullptr;
		}
	}
	if (tx_cq_)
		tx_cq_->bound_endpoints--;
	if (rx_cq_)
		rx_cq_->bound_endpoints--;
	if (eq_)
		eq_->bound_endpoints--;
	if (srx_)
		srx_->bound_endpoints--;
	domain_->children--;
	fid_.invalidate();
	if (tx_pool_.in_use() + rx_pool_.in_use() == 0)
		delete this;
	return 0;
}

int VerbsEndpoint::bind(struct fid *bfid, uint64_t flags)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (enabled_)
		return -FI_EOPBADSTATE;
	if (VerbsEventQueue *eq = VerbsEventQueue::from_fid(bfid)) {
		if (eq_)
			return -FI_EINVAL;
		// An accepted id still delivers its events to the listener's channel.
		if (id_ && id_->channel != eq->channel() && rdma_migrate_id(id_, eq->channel()))
			return -errno;
		eq_ = eq;
		eq_->bound_endpoints++;
		return 0;
	}
	if (VerbsCompletionQueue *cq = VerbsCompletionQueue::from_fid(bfid)) {
		constexpr uint64_t kCqBindFlags = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
		if ((flags & ~kCqBindFlags) || !(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		if (((flags & FI_TRANSMIT) && tx_cq_) || ((flags & FI_RECV) && rx_cq_))
			return -FI_EINVAL;
		if (flags & FI_TRANSMIT) {
			tx_cq_ = cq;
			tx_selective_ = flags & FI_SELECTIVE_COMPLETION;
			cq->bound_endpoints++;
		}
		if (flags & FI_RECV) {
			rx_cq_ = cq;
			rx_selective_ = flags & FI_SELECTIVE_COMPLETION;
			cq->bound_endpoints++;
		}
		return 0;
	}
	if (VerbsSharedRx *srx = VerbsSharedRx::from_fid(bfid)) {
		if (srx_ || srx->domain() != domain_ || !pending_recvs_.empty())
			return -FI_EINVAL;
		srx_ = srx;
		srx_->bound_endpoints++;
		return 0;
	}
	if (!bfid)
		return -FI_EINVAL;
	return -FI_ENOSYS; // counters, AVs and shared transmit contexts are not supported
}

int VerbsEndpoint::control(int command, void *arg)
{
	switch (command) {
	case FI_ENABLE: {
		std::lock_guard<std::mutex> guard(lock_);
		return enable_locked();
	}
	case FI_GETOPSFLAG:
	case FI_SETOPSFLAG: {
		if (!arg)
			return -FI_EINVAL;
		uint64_t *flags = static_cast<uint64_t *>(arg);
		bool tx = *flags & FI_TRANSMIT, rx = *flags & FI_RECV;
		if (tx == rx)
			return -FI_EINVAL;
		uint64_t &target = tx ? tx_op_flags_ : rx_op_flags_;
		if (command == FI_GETOPSFLAG)
			*flags = target | (tx ? FI_TRANSMIT : FI_RECV);
		else
			target = *flags & ~static_cast<uint64_t>(FI_TRANSMIT | FI_RECV);
		return 0;
	}
	default:
		return -FI_ENOSYS;
	}
}

int VerbsEndpoint::enable_locked()
{
	if (enabled_)
		return 0;
	if (!tx_cq_ && !rx_cq_)
		return -FI_ENOCQ;
	enabled_ = true;
	// A passive-side endpoint already has its id on the device: make the QP now, so
	// receives can be posted before fi_accept. The active side waits for the route.
	return id_ ? create_qp_locked() : 0;
}

int VerbsEndpoint::create_qp_locked()
{
	if (qp_)
		return 0;
	struct ibv_qp_init_attr attr {};
	attr.send_cq = (tx_cq_ ? tx_cq_ : rx_cq_)->ibv_cq();
	attr.recv_cq = (rx_cq_ ? rx_cq_ : tx_cq_)->ibv_cq();
	attr.qp_type = IBV_QPT_RC;
	attr.sq_sig_all = 0;
	attr.cap.max_send_wr = static_cast<uint32_t>(tx_size_);
	attr.cap.max_send_sge = static_cast<uint32_t>(tx_iov_limit_);
	if (srx_) {
		attr.srq = srx_->srq(); // the QP's own receive queue goes unused
	} else {
		attr.cap.max_recv_wr = static_cast<uint32_t>(rx_size_);
		attr.cap.max_recv_sge = static_cast<uint32_t>(rx_iov_limit_);
	}
	attr.cap.max_inline_data = static_cast<uint32_t>(inject_size_);
	if (rdma_create_qp(id_, domain_->pd(), &attr)) {
		int err = errno;
		VERBS_WARN(FI_LOG_EP_CTRL, "rdma_create_qp failed: %s\n", strerror(err));
		return err ? -err : -FI_EOTHER;
	}
	qp_ = id_->qp;
	inject_size_ = std::min<size_t>(inject_size_, attr.cap.max_inline_data);
	post_pending_recvs_locked();
	return 0;
}

void VerbsEndpoint::post_pending_recvs_locked()
{
	for (VerbsRequest *request : pending_recvs_) {
		struct ibv_recv_wr wr {};
		struct ibv_recv_wr *bad = nullptr;
		wr.wr_id = reinterpret_cast<uint64_t>(request);
		wr.sg_list = request->sge;
		wr.num_sge = request->num_sge;
		if (ibv_post_recv(qp_, &wr, &bad)) {
			VERBS_WARN(FI_LOG_EP_DATA, "a receive posted before the QP existed was lost\n");
			rx_pool_.release(request);
		}
	}
	pending_recvs_.clear();
}

int VerbsEndpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*static_cast<size_t *>(optval) = kCmDataMax;
	*optlen = sizeof(size_t);
	return 0;
}

int VerbsEndpoint::setopt(int level, int optname, const void *optval, size_t optlen)
{
	(void)level, (void)optname, (void)optval, (void)optlen;
	return -FI_ENOPROTOOPT;
}

ssize_t VerbsEndpoint::rx_size_left()
{
	if (srx_)
		return srx_->rx_size_left();
	return static_cast<ssize_t>(rx_pool_.available());
}

ssize_t VerbsEndpoint::tx_size_left()
{
	return static_cast<ssize_t>(tx_pool_.available());
}

} // namespace verbs
