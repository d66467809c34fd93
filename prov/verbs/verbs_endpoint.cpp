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
#include "prov/util/ops_tables.h"

namespace verbs {
namespace {

// How long a closing endpoint waits for the flush completions of its posted requests.
constexpr auto kDrainTimeout = std::chrono::seconds(2);

size_t clamp_size(size_t wanted, size_t fallback, size_t device_max)
{
	return std::max<size_t>(1, std::min(wanted ? wanted : fallback, device_max));
}

} // namespace

using Ep = VerbsEndpoint;
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<Ep>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<Ep>().bind);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<Ep>().control);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<Ep>().getopt);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<Ep>().setopt);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<Ep>().rx_size_left);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<Ep>().tx_size_left);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<Ep>().setname);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<Ep>().getname);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<Ep>().getpeer);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<Ep>().connect);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<Ep>().accept);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<Ep>().shutdown);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().recv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().recvv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().recvmsg);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().send);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().sendv);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().sendmsg);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().inject);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().senddata);
UTIL_ASSERT_IMPLEMENTED(util::make_msg_ops<Ep>().injectdata);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().read);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().readv);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().readmsg);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().write);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().writev);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().writemsg);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().inject);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().writedata);
UTIL_ASSERT_IMPLEMENTED(util::make_rma_ops<Ep>().injectdata);

VerbsEndpoint::VerbsEndpoint(VerbsDomain *domain, size_t tx_size, size_t rx_size, void *context)
	: util::FidObject(embedded_fid, FI_CLASS_EP, context), domain_(domain), tx_size_(tx_size),
	  rx_size_(rx_size), tx_pool_(tx_size, this, false), rx_pool_(rx_size, this, true)
{
	fid_ep &pub = embedded_fid.pub;
	pub.fid.ops = util::ops_ptr<Ep, util::make_fi_ops<Ep>>();
	pub.ops = util::ops_ptr<Ep, util::make_ep_ops<Ep>>();
	pub.cm = util::ops_ptr<Ep, util::make_cm_ops<Ep>>();
	pub.msg = util::ops_ptr<Ep, util::make_msg_ops<Ep>>();
	pub.rma = util::ops_ptr<Ep, util::make_rma_ops<Ep>>();
	pub.tagged = util::ops_ptr<Ep, util::make_tagged_ops<Ep>>();
	pub.atomic = util::ops_ptr<Ep, util::make_atomic_ops<Ep>>();
	pub.collective = util::ops_ptr<Ep, util::make_collective_ops<Ep>>();
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
		request = util::fid_cast<VerbsConnRequest>(info->handle, FI_CLASS_CONNREQ);
		if (!request)
			return -FI_EINVAL;
	}
	const struct ibv_device_attr &dev = domain->device_attr();
	const Params &p = params();
	size_t tx_size = clamp_size(info->tx_attr ? info->tx_attr->size : 0, p.tx_size,
				    static_cast<size_t>(dev.max_qp_wr));
	size_t rx_size = clamp_size(info->rx_attr ? info->rx_attr->size : 0, p.rx_size,
				    static_cast<size_t>(dev.max_qp_wr));
	auto *self = new VerbsEndpoint(domain, tx_size, rx_size, context);
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
	domain->ref();
	*ep = &self->embedded_fid.pub;
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
		tx_cq_->unref();
	if (rx_cq_)
		rx_cq_->unref();
	if (eq_)
		eq_->unref();
	if (srx_)
		srx_->unref();
	domain_->unref();
	// The object may have to outlive this call (above): refuse the fid from now on either way.
	retire_fid();
	if (tx_pool_.in_use() + rx_pool_.in_use() == 0)
		delete this;
	return 0;
}

int VerbsEndpoint::bind(struct fid *bfid, uint64_t flags)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (enabled_)
		return -FI_EOPBADSTATE;
	if (auto *eq = util::fid_cast<VerbsEventQueue>(bfid, FI_CLASS_EQ)) {
		if (eq_)
			return -FI_EINVAL;
		// An accepted id still delivers its events to the listener's channel.
		if (id_ && id_->channel != eq->channel() && rdma_migrate_id(id_, eq->channel()))
			return -errno;
		eq_ = eq;
		eq_->ref();
		return 0;
	}
	if (auto *cq = util::fid_cast<VerbsCompletionQueue>(bfid, FI_CLASS_CQ)) {
		constexpr uint64_t kCqBindFlags = FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION;
		if ((flags & ~kCqBindFlags) || !(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		if (((flags & FI_TRANSMIT) && tx_cq_) || ((flags & FI_RECV) && rx_cq_))
			return -FI_EINVAL;
		if (flags & FI_TRANSMIT) {
			tx_cq_ = cq;
			tx_selective_ = flags & FI_SELECTIVE_COMPLETION;
			cq->ref();
		}
		if (flags & FI_RECV) {
			rx_cq_ = cq;
			rx_selective_ = flags & FI_SELECTIVE_COMPLETION;
			cq->ref();
		}
		return 0;
	}
	if (auto *srx = util::fid_cast<VerbsSharedRx>(bfid, FI_CLASS_SRX_CTX)) {
		if (srx_ || srx->domain() != domain_ || !pending_recvs_.empty())
			return -FI_EINVAL;
		srx_ = srx;
		srx_->ref();
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
