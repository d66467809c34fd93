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
#include "prov/util/error.h"
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

VerbsEndpoint::VerbsEndpoint(VerbsDomain &domain, struct fi_info *info, void *context)
	: util::Endpoint(domain, info, context),
	  tx_size_(clamp_size(info->tx_attr ? info->tx_attr->size : 0, params().tx_size,
			      static_cast<size_t>(domain.device_attr().max_qp_wr))),
	  rx_size_(clamp_size(info->rx_attr ? info->rx_attr->size : 0, params().rx_size,
			      static_cast<size_t>(domain.device_attr().max_qp_wr))),
	  tx_pool_(tx_size_, this, false), rx_pool_(rx_size_, this, true)
{
	if (info->ep_attr && info->ep_attr->type != FI_EP_MSG && info->ep_attr->type != FI_EP_UNSPEC)
		throw util::Error(-FI_EINVAL);
	VerbsConnRequest *request = nullptr;
	if (info->handle) {
		request = util::fid_cast<VerbsConnRequest>(info->handle, FI_CLASS_CONNREQ);
		if (!request)
			throw util::Error(-FI_EINVAL);
	}
	const Params &p = params();
	size_t max_sge = std::min(kMaxSge, static_cast<size_t>(domain.device_attr().max_sge));
	tx_iov_limit_ = clamp_size(info->tx_attr ? info->tx_attr->iov_limit : 0, p.tx_iov_limit,
				   max_sge);
	rx_iov_limit_ = clamp_size(info->rx_attr ? info->rx_attr->iov_limit : 0, p.rx_iov_limit,
				   max_sge);
	inject_size_ = info->tx_attr ? info->tx_attr->inject_size : 0;
	max_msg_size_ = info->ep_attr && info->ep_attr->max_msg_size ? info->ep_attr->max_msg_size
								     : (1ULL << 31);
	rx_cq_data_mode_ = (info->mode & FI_RX_CQ_DATA) ||
			   (info->rx_attr && (info->rx_attr->mode & FI_RX_CQ_DATA));
	info_.reset(fi_dupinfo(info));
	if (!info_)
		throw util::Error(-FI_ENOMEM);
	pending_recvs_.reserve(rx_size_);
	// Last: from here on the id is ours, and nothing after it throws but the device check.
	if (request)
		take_connection_request(info, *request);
	install_ops<VerbsEndpoint>();
}

void VerbsEndpoint::take_connection_request(struct fi_info *info, VerbsConnRequest &request)
{
	connreq_responder_resources_ = request.responder_resources();
	connreq_initiator_depth_ = request.initiator_depth();
	struct rdma_cm_id *id = request.take_id(); // frees the request: the handle goes too
	info_->handle = nullptr;
	info->handle = nullptr;
	if (id->verbs != verbs_domain().context()) {
		// The destructor will not run for a constructor that throws: the id goes here.
		VERBS_WARN(FI_LOG_EP_CTRL, "connection request arrived on another device\n");
		rdma_reject(id, nullptr, 0);
		rdma_destroy_id(id);
		throw util::Error(-FI_EINVAL);
	}
	id_ = id;
	id_->context = static_cast<CmEventTarget *>(this);
	connreq_taken_ = true;
}

VerbsEndpoint::~VerbsEndpoint()
{
	if (id_) {
		if (id_->qp)
			rdma_destroy_qp(id_);
		rdma_destroy_id(id_);
	}
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
		if (VerbsCompletionQueue *tx = verbs_tx_cq())
			tx->poll_device();
		if (VerbsCompletionQueue *rx = verbs_rx_cq(); rx && rx != verbs_tx_cq())
			rx->poll_device();
		std::this_thread::yield();
	}
}

int VerbsEndpoint::close()
{
	if (busy())
		return -FI_EBUSY;
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
	if (srx_) {
		srx_->unref();
		srx_ = nullptr;
	}
	if (tx_pool_.in_use() + rx_pool_.in_use() == 0)
		return util::Endpoint::close(); // deletes this; util releases the bindings
	// Completions still owed by the device may name this endpoint's slots: keep the memory
	// rather than risk a use after free. Nothing will delete it, so what its destruction
	// would release goes now, and the fid is refused from here on.
	VERBS_WARN(FI_LOG_EP_CTRL, "endpoint closed with unflushed requests; leaking it\n");
	if (id_) {
		if (id_->qp)
			rdma_destroy_qp(id_);
		rdma_destroy_id(id_);
		id_ = nullptr;
	}
	unbind_all();
	domain().unref();
	retire_fid();
	return 0;
}

int VerbsEndpoint::bind(struct fid *bfid, uint64_t flags)
{
	if (!bfid)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> guard(lock_);
	if (enabled())
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_SRX_CTX:
		return bind_shared_rx(bfid);
	// The QP is made on verbs' ibv CQs and the CM id on verbs' rdma_cm channel.
	case FI_CLASS_EQ:
		if (!util::fid_cast<VerbsEventQueue>(bfid, FI_CLASS_EQ))
			return -FI_EINVAL;
		break;
	case FI_CLASS_CQ:
		if (!util::fid_cast<VerbsCompletionQueue>(bfid, FI_CLASS_CQ))
			return -FI_EINVAL;
		break;
	default:
		// Counters, address vectors, shared transmit contexts, memory regions: verbs
		// has none of them to offer an endpoint.
		return -FI_ENOSYS;
	}
	return util::Endpoint::bind(bfid, flags);
}

int VerbsEndpoint::bind_shared_rx(struct fid *bfid)
{
	auto *srx = util::fid_cast<VerbsSharedRx>(bfid, FI_CLASS_SRX_CTX);
	if (!srx || srx_ || srx->domain() != &verbs_domain() || !pending_recvs_.empty())
		return -FI_EINVAL;
	srx_ = srx;
	srx_->ref();
	return 0;
}

int VerbsEndpoint::enable()
{
	std::lock_guard<std::mutex> guard(lock_);
	return enable_locked();
}

// Also reached from fi_connect and fi_accept, which enable the endpoint themselves.
int VerbsEndpoint::enable_locked()
{
	if (enabled())
		return 0;
	if (!has_completion_target())
		return -FI_ENOCQ;
	if (id_) {
		// An accepted id still delivers its events to the listener's channel.
		VerbsEventQueue *eq = verbs_eq();
		if (eq && id_->channel != eq->channel() && rdma_migrate_id(id_, eq->channel()))
			return errno ? -errno : -FI_EOTHER;
		// A passive-side endpoint already has its id on the device: make the QP now, so
		// receives can be posted before fi_accept. The active side waits for the route.
		if (int ret = create_qp_locked())
			return ret;
	}
	mark_enabled();
	return 0;
}

int VerbsEndpoint::create_qp_locked()
{
	if (qp_)
		return 0;
	struct ibv_qp_init_attr attr {};
	VerbsCompletionQueue *tx_cq = verbs_tx_cq(), *rx_cq = verbs_rx_cq();
	attr.send_cq = (tx_cq ? tx_cq : rx_cq)->ibv_cq();
	attr.recv_cq = (rx_cq ? rx_cq : tx_cq)->ibv_cq();
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
	if (rdma_create_qp(id_, verbs_domain().pd(), &attr)) {
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
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_CM_DATA_SIZE) {
		if (!optval || !optlen || *optlen < sizeof(size_t))
			return -FI_ETOOSMALL;
		*static_cast<size_t *>(optval) = kCmDataMax;
		*optlen = sizeof(size_t);
		return 0;
	}
	// Verbs takes no multi-receive buffers (FI_MULTI_RECV is refused), so it has no
	// threshold for them to report or set.
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return util::Endpoint::getopt(level, optname, optval, optlen);
}

int VerbsEndpoint::setopt(int level, int optname, const void *optval, size_t optlen)
{
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return util::Endpoint::setopt(level, optname, optval, optlen);
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
