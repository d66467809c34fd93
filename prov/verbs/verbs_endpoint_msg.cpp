// Endpoint data path for messages: every fi_send/fi_recv form becomes one work request.
#include <arpa/inet.h>

#include <cstring>

#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/util/ops_tables.h"
#include "prov/verbs/verbs_mr.h"
#include "prov/util/flow_ctrl_ops.h"
#include "prov/util/mr_bind_flag.h"

namespace verbs {
namespace {

constexpr uint64_t kSendFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA |
				FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE |
				FI_FENCE | FI_MORE;
constexpr uint64_t kRecvFlags = FI_COMPLETION | FI_MORE;

} // namespace

int VerbsEndpoint::lkey_for(const struct iovec &iov, void *desc, uint32_t *lkey)
{
	VerbsMemoryRegion *mr = VerbsMemoryRegion::from_desc(desc);
	if (!mr || mr->domain() != &verbs_domain() || !mr->covers(iov.iov_base, iov.iov_len))
		return -FI_EINVAL;
	*lkey = mr->lkey();
	return 0;
}

ssize_t VerbsEndpoint::post_recv(const struct iovec *iov, void **desc, size_t count, void *context,
				 uint64_t flags)
{
	if (count > rx_iov_limit_ || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~kRecvFlags)
		return -FI_EBADFLAGS;
	if (srx_)
		return -FI_EOPNOTSUPP; // its receives are posted to the shared context
	struct ibv_sge sge[kMaxSge];
	int num_sge = 0;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len == 0)
			continue;
		if (!desc || iov[i].iov_len > max_msg_size_)
			return -FI_EINVAL;
		if (int ret = lkey_for(iov[i], desc[i], &sge[num_sge].lkey))
			return ret;
		sge[num_sge].addr = reinterpret_cast<uintptr_t>(iov[i].iov_base);
		sge[num_sge].length = static_cast<uint32_t>(iov[i].iov_len);
		num_sge++;
	}
	VerbsRequest *request = rx_pool_.acquire();
	if (!request)
		return -FI_EAGAIN;
	request->context = context;
	request->flags = FI_RECV | FI_MSG;
	request->report = rx_entry_wanted(flags);
	request->buf = count ? iov[0].iov_base : nullptr;
	request->num_sge = num_sge;
	std::memcpy(request->sge, sge, sizeof(sge[0]) * num_sge);

	std::lock_guard<std::mutex> guard(lock_);
	if (!qp_) {
		pending_recvs_.push_back(request); // capacity reserved: rx_size slots at most
		return 0;
	}
	struct ibv_recv_wr wr {};
	struct ibv_recv_wr *bad = nullptr;
	wr.wr_id = reinterpret_cast<uint64_t>(request);
	wr.sg_list = request->sge;
	wr.num_sge = num_sge;
	if (int err = ibv_post_recv(qp_, &wr, &bad)) {
		rx_pool_.release(request);
		return err == ENOMEM ? -FI_EAGAIN : -err;
	}
	return 0;
}

ssize_t VerbsEndpoint::post_send(const SendRequest &req)
{
	if (req.count > tx_iov_limit_ || (req.count && !req.iov))
		return -FI_EINVAL;
	if (req.flags & ~kSendFlags)
		return -FI_EBADFLAGS;
	// The write would consume a receive the app never agreed to post (and, finding none,
	// be retried by the peer forever).
	if (req.opcode == IBV_WR_RDMA_WRITE_WITH_IMM && !rx_cq_data_mode_)
		return -FI_EOPNOTSUPP;
	if (state_ != State::Connected)
		return -FI_EOPBADSTATE;
	size_t total = 0;
	for (size_t i = 0; i < req.count; i++)
		total += req.iov[i].iov_len;
	if (total > max_msg_size_)
		return -FI_EMSGSIZE;
	bool is_read = req.opcode == IBV_WR_RDMA_READ;
	if ((req.flags & FI_INJECT) && (is_read || total > inject_size_))
		return -FI_EINVAL;
	// Small payloads go inline: the device copies them at post time, no lkey needed.
	bool use_inline = !is_read && total <= inject_size_;

	struct ibv_sge sge[kMaxSge];
	int num_sge = 0;
	for (size_t i = 0; i < req.count; i++) {
		if (req.iov[i].iov_len == 0)
			continue;
		if (!req.iov[i].iov_base)
			return -FI_EINVAL;
		sge[num_sge].lkey = 0;
		if (!use_inline) {
			if (!req.desc)
				return -FI_EINVAL;
			if (int ret = lkey_for(req.iov[i], req.desc[i], &sge[num_sge].lkey))
				return ret;
		}
		sge[num_sge].addr = reinterpret_cast<uintptr_t>(req.iov[i].iov_base);
		sge[num_sge].length = static_cast<uint32_t>(req.iov[i].iov_len);
		num_sge++;
	}
	// With flow control on, nothing that lands in a peer receive goes out without a credit:
	// an RC send finding no receive would be retried (RNR) and stall the connection.
	bool needs_credit = flow_ctrl_.load(std::memory_order_relaxed) &&
			    req.opcode != IBV_WR_RDMA_WRITE && !is_read;
	if (needs_credit && !take_peer_credit())
		return -FI_EAGAIN;
	VerbsRequest *request = tx_pool_.acquire();
	if (!request) {
		if (needs_credit)
			peer_credits_++;
		return -FI_EAGAIN;
	}
	request->context = req.context;
	request->flags = req.comp_flags;
	request->report = !(req.flags & FI_INJECT) && tx_entry_wanted(req.flags);

	struct ibv_send_wr wr {};
	struct ibv_send_wr *bad = nullptr;
	wr.wr_id = reinterpret_cast<uint64_t>(request);
	wr.sg_list = sge;
	wr.num_sge = num_sge;
	wr.opcode = req.opcode;
	// Every request is signaled so its slot comes back; unwanted ones are not reported.
	wr.send_flags = IBV_SEND_SIGNALED;
	if (use_inline)
		wr.send_flags |= IBV_SEND_INLINE;
	if (req.flags & FI_FENCE)
		wr.send_flags |= IBV_SEND_FENCE;
	if (req.opcode == IBV_WR_SEND_WITH_IMM || req.opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = htonl(static_cast<uint32_t>(req.data));
	if (req.opcode == IBV_WR_SEND_WITH_INV)
		wr.invalidate_rkey = static_cast<uint32_t>(req.data);
	if (req.opcode != IBV_WR_SEND && req.opcode != IBV_WR_SEND_WITH_IMM &&
	    req.opcode != IBV_WR_SEND_WITH_INV) {
		wr.wr.rdma.remote_addr = req.remote_addr;
		wr.wr.rdma.rkey = static_cast<uint32_t>(req.rkey);
	}
	if (int err = ibv_post_send(qp_, &wr, &bad)) {
		tx_pool_.release(request);
		if (needs_credit)
			peer_credits_++;
		return err == ENOMEM ? -FI_EAGAIN : -err;
	}
	return 0;
}

bool VerbsEndpoint::take_peer_credit()
{
	uint64_t have = peer_credits_.load();
	do {
		if (have == 0)
			return false;
	} while (!peer_credits_.compare_exchange_weak(have, have - 1));
	return true;
}

namespace {

// The endpoint comes from the caller of an ops extension, not from a table installed on it:
// recover it with a checked cast (another provider's endpoint gives -FI_EINVAL).
VerbsEndpoint *flow_ctrl_endpoint(struct fid_ep *ep) noexcept
{
	return util::fid_cast_exact<VerbsEndpoint>(ep ? &ep->fid : nullptr);
}

struct ofi_flow_ctrl_ops flow_ctrl_table = {
	sizeof(struct ofi_flow_ctrl_ops),
	[](struct fid_ep *ep, uint64_t credits) noexcept {
		VerbsEndpoint *e = flow_ctrl_endpoint(ep);
		return e ? e->flow_ctrl_enable(credits) : -FI_EINVAL;
	},
	[](struct fid_ep *ep, uint64_t credits) noexcept {
		VerbsEndpoint *e = flow_ctrl_endpoint(ep);
		return e ? e->flow_ctrl_add_credits(credits) : -FI_EINVAL;
	},
	[](struct fid_ep *ep) noexcept {
		VerbsEndpoint *e = flow_ctrl_endpoint(ep);
		return e ? e->flow_ctrl_credits() : static_cast<ssize_t>(-FI_EINVAL);
	},
};

} // namespace

struct ofi_flow_ctrl_ops *VerbsEndpoint::flow_ctrl_ops()
{
	return &flow_ctrl_table;
}

int VerbsEndpoint::flow_ctrl_enable(uint64_t credits)
{
	if (flow_ctrl_.exchange(true))
		return -FI_EALREADY;
	peer_credits_ += credits;
	return 0;
}

int VerbsEndpoint::flow_ctrl_add_credits(uint64_t credits)
{
	if (!flow_ctrl_.load())
		return -FI_EOPBADSTATE;
	peer_credits_ += credits;
	return 0;
}

ssize_t VerbsEndpoint::flow_ctrl_credits()
{
	if (!flow_ctrl_.load())
		return -FI_EOPBADSTATE;
	return static_cast<ssize_t>(peer_credits_.load());
}

ssize_t VerbsEndpoint::recv(void *buf, size_t len, void *desc, fi_addr_t, void *context)
{
	struct iovec iov = {buf, len};
	return post_recv(&iov, &desc, 1, context, rx_op_flags() & kRecvFlags);
}

ssize_t VerbsEndpoint::recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t,
			     void *context)
{
	return post_recv(iov, desc, count, context, rx_op_flags() & kRecvFlags);
}

ssize_t VerbsEndpoint::recvmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post_recv(msg->msg_iov, msg->desc, msg->iov_count, msg->context, flags);
}

ssize_t VerbsEndpoint::send(const void *buf, size_t len, void *desc, fi_addr_t, void *context)
{
	struct iovec iov = {const_cast<void *>(buf), len};
	return post_send({IBV_WR_SEND, &iov, &desc, 1, 0, 0, 0, context,
			  tx_op_flags() & kSendFlags, FI_SEND | FI_MSG});
}

ssize_t VerbsEndpoint::sendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t,
			     void *context)
{
	return post_send({IBV_WR_SEND, iov, desc, count, 0, 0, 0, context,
			  tx_op_flags() & kSendFlags, FI_SEND | FI_MSG});
}

ssize_t VerbsEndpoint::sendmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	bool with_data = flags & FI_REMOTE_CQ_DATA;
	if (flags & OFI_SEND_INVALIDATE) {
		// The peer's device invalidates the key (prov/util/mr_bind_flag.h): its rxm
		// learnt from the peer that the key is a bound window of that peer.
		if (with_data || msg->data > UINT32_MAX)
			return -FI_EINVAL;
		return post_send({IBV_WR_SEND_WITH_INV, msg->msg_iov, msg->desc, msg->iov_count,
				  msg->data, 0, 0, msg->context, flags & ~OFI_SEND_INVALIDATE,
				  FI_SEND | FI_MSG});
	}
	return post_send({with_data ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, msg->msg_iov, msg->desc,
			  msg->iov_count, msg->data, 0, 0, msg->context, flags, FI_SEND | FI_MSG});
}

ssize_t VerbsEndpoint::inject(const void *buf, size_t len, fi_addr_t)
{
	struct iovec iov = {const_cast<void *>(buf), len};
	return post_send({IBV_WR_SEND, &iov, nullptr, 1, 0, 0, 0, nullptr, FI_INJECT,
			  FI_SEND | FI_MSG});
}

ssize_t VerbsEndpoint::senddata(const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t,
				void *context)
{
	struct iovec iov = {const_cast<void *>(buf), len};
	return post_send({IBV_WR_SEND_WITH_IMM, &iov, &desc, 1, data, 0, 0, context,
			  (tx_op_flags() & kSendFlags) | FI_REMOTE_CQ_DATA, FI_SEND | FI_MSG});
}

ssize_t VerbsEndpoint::injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t)
{
	struct iovec iov = {const_cast<void *>(buf), len};
	return post_send({IBV_WR_SEND_WITH_IMM, &iov, nullptr, 1, data, 0, 0, nullptr,
			  FI_INJECT | FI_REMOTE_CQ_DATA, FI_SEND | FI_MSG});
}

} // namespace verbs
