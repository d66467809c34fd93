// Endpoint data path for RMA: reads and writes to one remote region per request
// (rma_iov_limit 1), addressed by virtual address and the peer's rkey.
#include "prov/verbs/verbs_endpoint.h"

#include <cerrno>

namespace verbs {
namespace {

constexpr uint64_t kRmaKeyMax = UINT32_MAX;

} // namespace

ssize_t VerbsEndpoint::read(void *buf, size_t len, void *desc, fi_addr_t, uint64_t addr,
			    uint64_t key, void *context)
{
	struct iovec iov = {buf, len};
	return readv(&iov, &desc, 1, 0, addr, key, context);
}

ssize_t VerbsEndpoint::readv(const struct iovec *iov, void **desc, size_t count, fi_addr_t,
			     uint64_t addr, uint64_t key, void *context)
{
	if (key > kRmaKeyMax)
		return -FI_EINVAL;
	return post_send({IBV_WR_RDMA_READ, iov, desc, count, 0, addr, key, context,
			  tx_op_flags() & ~static_cast<uint64_t>(FI_INJECT), FI_RMA | FI_READ});
}

ssize_t VerbsEndpoint::readmsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov || msg->rma_iov[0].key > kRmaKeyMax)
		return -FI_EINVAL;
	size_t total = 0;
	for (size_t i = 0; msg->msg_iov && i < msg->iov_count; i++)
		total += msg->msg_iov[i].iov_len;
	if (total > msg->rma_iov[0].len)
		return -FI_EINVAL;
	return post_send({IBV_WR_RDMA_READ, msg->msg_iov, msg->desc, msg->iov_count, 0,
			  msg->rma_iov[0].addr, msg->rma_iov[0].key, msg->context, flags,
			  FI_RMA | FI_READ});
}

ssize_t VerbsEndpoint::write(const void *buf, size_t len, void *desc, fi_addr_t, uint64_t addr,
			     uint64_t key, void *context)
{
	struct iovec iov = {const_cast<void *>(buf), len};
	return writev(&iov, &desc, 1, 0, addr, key, context);
}

ssize_t VerbsEndpoint::writev(const struct iovec *iov, void **desc, size_t count, fi_addr_t,
			      uint64_t addr, uint64_t key, void *context)
{
	if (key > kRmaKeyMax)
		return -FI_EINVAL;
	return post_send({IBV_WR_RDMA_WRITE, iov, desc, count, 0, addr, key, context,
			  tx_op_flags() & ~static_cast<uint64_t>(FI_INJECT), FI_RMA | FI_WRITE});
}

ssize_t VerbsEndpoint::writemsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov || msg->rma_iov[0].key > kRmaKeyMax)
		return -FI_EINVAL;
	size_t total = 0;
	for (size_t i = 0; msg->msg_iov && i < msg->iov_count; i++)
		total += msg->msg_iov[i].iov_len;
	if (total > msg->rma_iov[0].len)
		return -FI_EINVAL;
	bool with_data = flags & FI_REMOTE_CQ_DATA;
	return post_send({with_data ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE, msg->msg_iov,
			  msg->desc, msg->iov_count, msg->data, msg->rma_iov[0].addr,
			  msg->rma_iov[0].key, msg->context, flags, FI_RMA | FI_WRITE});
}

ssize_t VerbsEndpoint::inject_write(const void *buf, size_t len, fi_addr_t, uint64_t addr,
				    uint64_t key)
{
	if (key > kRmaKeyMax)
		return -FI_EINVAL;
	struct iovec iov = {const_cast<void *>(buf), len};
	return post_send({IBV_WR_RDMA_WRITE, &iov, nullptr, 1, 0, addr, key, nullptr, FI_INJECT,
			  FI_RMA | FI_WRITE});
}

ssize_t VerbsEndpoint::writedata(const void *buf, size_t len, void *desc, uint64_t data,
				 fi_addr_t, uint64_t addr, uint64_t key, void *context)
{
	if (key > kRmaKeyMax)
		return -FI_EINVAL;
	struct iovec iov = {const_cast<void *>(buf), len};
	return post_send({IBV_WR_RDMA_WRITE_WITH_IMM, &iov, &desc, 1, data, addr, key, context,
			  (tx_op_flags() & ~static_cast<uint64_t>(FI_INJECT)) | FI_REMOTE_CQ_DATA,
			  FI_RMA | FI_WRITE});
}

ssize_t VerbsEndpoint::inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t,
					uint64_t addr, uint64_t key)
{
	if (key > kRmaKeyMax)
		return -FI_EINVAL;
	struct iovec iov = {const_cast<void *>(buf), len};
	return post_send({IBV_WR_RDMA_WRITE_WITH_IMM, &iov, nullptr, 1, data, addr, key, nullptr,
			  FI_INJECT | FI_REMOTE_CQ_DATA, FI_RMA | FI_WRITE});
}

int VerbsEndpoint::bind_window(struct ibv_mw *mw, struct ibv_mr *mr, const void *addr,
				size_t len, uint32_t rkey, uint32_t *qp_num)
{
	if (state_ != State::Connected)
		return -FI_EOPBADSTATE;
	// A slot like any send's: the send queue never holds more than tx_size requests, and
	// a failed bind (reported as an error completion without context) names its cause.
	VerbsRequest *request = tx_pool_.acquire();
	if (!request)
		return -FI_EAGAIN;
	request->context = nullptr;
	request->flags = FI_RMA;
	request->report = false;
	struct ibv_send_wr wr {};
	struct ibv_send_wr *bad = nullptr;
	wr.wr_id = reinterpret_cast<uint64_t>(request);
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = reinterpret_cast<uintptr_t>(addr);
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	if (int err = ibv_post_send(qp_, &wr, &bad)) {
		tx_pool_.release(request);
		return err == ENOMEM ? -FI_EAGAIN : -err;
	}
	*qp_num = qp_->qp_num;
	return 0;
}

} // namespace verbs
