// RMA: passed through to the core connection of the target, with rxm descriptors turned into
// the core's. The core checks the remote key and range against the target's registration.
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_flags.h"

#include <rdma/fi_errno.h>

#include <cstring>

namespace rxm {

// Reads and writes differ only in their kind, completion flag and the access the local
// buffer needs; everything else (checks, connection, descriptors) is shared. Writes may carry
// remote CQ data (the core delivers it to the target's CQ) and may be injects: the data is
// then copied into a bounce buffer, which the op keeps until the core completes the write.
ssize_t RxmEndpoint::rma_common(const struct fi_msg_rma *msg, uint64_t flags, bool is_write)
{
	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	if (!is_write)
		flags &= ~(FI_REMOTE_CQ_DATA | FI_INJECT); // neither means anything for a read
	if (!domain_->rma_capable())
		return -FI_EOPNOTSUPP;
	if (msg->iov_count > kRndvMaxSegments || (msg->iov_count && !msg->msg_iov))
		return -FI_EINVAL;
	uint64_t total = 0;
	for (size_t i = 0; i < msg->iov_count; i++)
		total += msg->msg_iov[i].iov_len;
	if (total != msg->rma_iov[0].len)
		return -FI_EINVAL;
	if ((flags & FI_INJECT) && total > inject_limit_)
		return -FI_EMSGSIZE;
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_EOPBADSTATE;
	check_shm_before_send(); // a shm peer's death after idle passes (progress())
	int err = 0;
	RxmConn *conn = conn_for_send(msg->addr, &err);
	if (!conn)
		return err;
	TxOp *op = alloc_op(conn);
	if (!op)
		return -FI_EAGAIN;
	const uint64_t access = is_write ? FI_WRITE : FI_READ;
	op->kind = is_write ? TxKind::rma_write : TxKind::rma_read;
	op->context = msg->context;
	op->cq_flags = FI_RMA | access;
	op->report = !(flags & kNoCompletionFlag) && tx_entry_wanted(flags);
	// The wire header is unused by RMA ops: it keeps the remote CQ data for pump_one.
	if (flags & FI_REMOTE_CQ_DATA) {
		op->hdr.flags |= wire_flag::remote_cq_data;
		op->hdr.cq_data = msg->data;
	}
	op->conn = conn;
	op->total_len = total;
	op->rma_addr = msg->rma_iov[0].addr;
	op->rma_key = msg->rma_iov[0].key;
	if (flags & FI_INJECT) {
		TxBuffer *buf = alloc_tx_buffer(conn);
		if (!buf) {
			free_op(op);
			return -FI_EAGAIN;
		}
		uint8_t *out = buf->data;
		for (size_t i = 0; i < msg->iov_count; i++) {
			memcpy(out, msg->msg_iov[i].iov_base, msg->msg_iov[i].iov_len);
			out += msg->msg_iov[i].iov_len;
		}
		buf->len = total;
		op->prepared = buf; // freed with the op
		op->iov[0] = {buf->data, total};
		op->desc[0] = tx_mr_ ? fi_mr_desc(tx_mr_) : nullptr;
		op->iov_count = 1;
		queue_op(conn, op);
		return 0;
	}
	for (size_t i = 0; i < msg->iov_count; i++)
		op->iov[i] = msg->msg_iov[i];
	op->iov_count = msg->iov_count;
	int ret = translate_desc(msg->msg_iov, msg->desc, msg->iov_count, access, op);
	if (ret) {
		free_op(op);
		return ret;
	}
	queue_op(conn, op);
	return 0;
}

// A peer's RMA write reported by the core (tcp, shm: with remote CQ data only, and the
// connection's remote_writes context; verbs: a write with immediate data consumes one of the
// connection's receive buffers). Its remote CQ data goes to our receive CQ.
void RxmEndpoint::on_remote_write(const struct fi_cq_data_entry &comp)
{
	RxmConn *conn = nullptr;
	auto *ctx = static_cast<CoreContext *>(comp.op_context);
	if (ctx && ctx->kind == CoreOpKind::rx_buffer) {
		auto *buf = reinterpret_cast<RxBuffer *>(ctx);
		conn = buf->conn;
		if (repost(buf))
			on_buffer_reposted(conn);
	} else if (ctx && ctx->kind == CoreOpKind::remote_write) {
		conn = static_cast<RxmConn *>(ctx->owner);
	}
	// Remote CQ data has no posted operation to ask for a completion: always reported
	// (FI_COMPLETION); source_of is a reverse lookup, not made when there is no CQ.
	if ((comp.flags & FI_REMOTE_CQ_DATA) && rx_cq())
		complete_rx(FI_COMPLETION, nullptr, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
			    comp.len, nullptr, comp.data, 0,
			    conn ? source_of(conn) : FI_ADDR_NOTAVAIL);
}

ssize_t RxmEndpoint::writemsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!flags_allowed(flags, kRmaMsgFlags))
		return -FI_EBADFLAGS;
	return rma_common(msg, flags, true);
}

ssize_t RxmEndpoint::readmsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!flags_allowed(flags, kRmaMsgFlags))
		return -FI_EBADFLAGS;
	return rma_common(msg, flags, false);
}

ssize_t RxmEndpoint::write(const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr,
			   uint64_t key, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return writev(&iov, &desc, 1, dest, addr, key, context);
}

ssize_t RxmEndpoint::writev(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			    uint64_t addr, uint64_t key, void *context)
{
	uint64_t total = 0;
	for (size_t i = 0; iov && i < count; i++)
		total += iov[i].iov_len;
	fi_rma_iov rma{addr, total, key};
	fi_msg_rma msg{iov, desc, count, dest, &rma, 1, context, 0};
	return rma_common(&msg, tx_op_flags(), true);
}

ssize_t RxmEndpoint::writedata(const void *buf, size_t len, void *desc, uint64_t data,
			       fi_addr_t dest, uint64_t addr, uint64_t key, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	fi_msg_rma msg{&iov, &desc, 1, dest, &rma, 1, context, data};
	return rma_common(&msg, tx_op_flags() | FI_REMOTE_CQ_DATA, true);
}

ssize_t RxmEndpoint::inject_write(const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
				  uint64_t key)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	fi_msg_rma msg{&iov, nullptr, 1, dest, &rma, 1, nullptr, 0};
	return rma_common(&msg, FI_INJECT | kNoCompletionFlag, true);
}

ssize_t RxmEndpoint::inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t dest,
				      uint64_t addr, uint64_t key)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	fi_msg_rma msg{&iov, nullptr, 1, dest, &rma, 1, nullptr, data};
	return rma_common(&msg, FI_INJECT | FI_REMOTE_CQ_DATA | kNoCompletionFlag, true);
}

ssize_t RxmEndpoint::read(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr,
			  uint64_t key, void *context)
{
	iovec iov{buf, len};
	return readv(&iov, &desc, 1, src, addr, key, context);
}

ssize_t RxmEndpoint::readv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			   uint64_t addr, uint64_t key, void *context)
{
	uint64_t total = 0;
	for (size_t i = 0; iov && i < count; i++)
		total += iov[i].iov_len;
	fi_rma_iov rma{addr, total, key};
	fi_msg_rma msg{iov, desc, count, src, &rma, 1, context, 0};
	return rma_common(&msg, tx_op_flags(), false);
}

} // namespace rxm
