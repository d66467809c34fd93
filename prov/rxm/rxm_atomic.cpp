// Emulated atomics: the initiator sends an atomic_request (operands inline, so one request
// fits one eager message); the target checks the key, range and access rights against its
// registration, applies the operation under the domain's atomic lock and answers with an
// atomic_response carrying the status and, for fetching calls, the previous values.
#include "prov/rxm/rxm_atomic_exec.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_flags.h"
#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_errno.h>

#include <cstring>
#include <mutex>
#include <vector>

namespace rxm {

ssize_t RxmEndpoint::atomic_common(const struct fi_msg_atomic *msg, const struct fi_ioc *compare,
				   struct fi_ioc *result, uint64_t flags, int kind_value)
{
	AtomicKind kind = static_cast<AtomicKind>(kind_value);
	if (!msg || msg->iov_count != 1 || !msg->msg_iov || msg->rma_iov_count != 1 ||
	    !msg->rma_iov)
		return -FI_EINVAL;
	uint8_t op_code = static_cast<uint8_t>(msg->op);
	uint8_t datatype = static_cast<uint8_t>(msg->datatype);
	if (!atomic_supported(op_code, datatype, kind))
		return -FI_EOPNOTSUPP;
	size_t count = msg->msg_iov[0].count;
	size_t elem = atomic_datatype_size(datatype);
	if (count == 0 || count != msg->rma_iov[0].count ||
	    count > atomic_max_count(datatype, kind, eager_limit_))
		return -FI_EINVAL;
	if (op_code != FI_ATOMIC_READ && !msg->msg_iov[0].addr)
		return -FI_EINVAL;
	if (kind != AtomicKind::write && (!result || !result->addr || result->count < count))
		return -FI_EINVAL;
	if (kind == AtomicKind::compare && (!compare || !compare->addr || compare->count < count))
		return -FI_EINVAL;

	std::lock_guard guard(lock_);
	if (!enabled_)
		return -FI_EOPBADSTATE;
	int err = 0;
	RxmConn *conn = conn_for_send(msg->addr, &err);
	if (!conn)
		return err;
	TxOp *op = alloc_op(conn);
	if (!op)
		return -FI_EAGAIN;
	TxBuffer *buf = alloc_tx_buffer(conn);
	if (!buf) {
		free_op(op);
		return -FI_EAGAIN;
	}
	op->kind = TxKind::atomic;
	op->context = msg->context;
	op->cq_flags = FI_ATOMIC | (kind == AtomicKind::write ? FI_WRITE : FI_READ);
	op->report = wants_tx_completion(flags) && !(flags & kNoCompletionFlag);
	op->conn = conn;
	op->result = kind == AtomicKind::write ? nullptr : result->addr;
	op->result_len = kind == AtomicKind::write ? 0 : count * elem;

	size_t operand_len = op_code == FI_ATOMIC_READ ? 0 : count * elem;
	size_t compare_len = kind == AtomicKind::compare ? count * elem : 0;
	WireHeader h;
	h.op = WireOp::atomic_request;
	h.flags = (kind != AtomicKind::write ? wire_flag::atomic_fetch : 0) |
		  (kind == AtomicKind::compare ? wire_flag::atomic_compare : 0);
	h.msg_id = (uint64_t(op->generation) << 32) | op->index;
	h.payload_len = static_cast<uint32_t>(kAtomicRequestFixedSize + operand_len + compare_len);
	h.total_len = count * elem;
	uint8_t *p = buf->data;
	encode_header(h, p);
	p += kWireHeaderSize;
	encode_atomic_request({op_code, datatype, static_cast<uint32_t>(count), msg->rma_iov[0].addr,
			       msg->rma_iov[0].key},
			      p);
	p += kAtomicRequestFixedSize;
	if (operand_len)
		memcpy(p, msg->msg_iov[0].addr, operand_len);
	if (compare_len)
		memcpy(p + operand_len, compare->addr, compare_len);
	buf->len = kWireHeaderSize + h.payload_len;
	buf->op = op;
	op->prepared = buf;
	queue_op(conn, op);
	return 0;
}

void RxmEndpoint::handle_atomic_request(RxmConn *conn, const WireHeader &hdr,
					std::span<const uint8_t> payload)
{
	AtomicRequest req;
	std::span<const uint8_t> operand, compare;
	if (decode_atomic_request(payload, hdr.flags, &req, &operand, &compare)) {
		RXM_WARN(FI_LOG_EP_DATA, "malformed atomic request\n");
		fail_conn(conn, -FI_EIO);
		return;
	}
	bool fetch = hdr.flags & wire_flag::atomic_fetch;
	size_t size = size_t(req.count) * atomic_datatype_size(req.datatype);
	TxOp *op = alloc_op();
	TxBuffer *buf = op ? alloc_tx_buffer() : nullptr;
	if (!buf) {
		if (op)
			free_op(op);
		RXM_WARN(FI_LOG_EP_DATA, "no room to answer an atomic request\n");
		fail_conn(conn, -FI_ENOMEM);
		return;
	}
	uint8_t *old = buf->data + kWireHeaderSize + kAtomicResponseFixedSize;
	int status = 0;
	if (kWireHeaderSize + kAtomicResponseFixedSize + (fetch ? size : 0) >
	    kWireHeaderSize + eager_limit_) {
		status = -FI_EINVAL;
	} else if (!(info_->caps & FI_ATOMIC)) {
		status = -FI_EOPNOTSUPP;
	} else {
		// The target must lie inside a registration that allows what the op does. Looked
		// up and applied under the atomic lock, which fi_close of an RxmMr also takes: once
		// close returned, no atomic touches the region.
		std::lock_guard atomic_guard(domain_->atomic_lock());
		RxmMr *mr = domain_->find_mr(req.key);
		uint64_t need = (req.op == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) |
				(fetch ? FI_REMOTE_READ : 0);
		uint8_t *target = nullptr;
		if (mr && mr->base()) {
			uint64_t start = domain_->core_uses_virt_addr()
						 ? req.addr - reinterpret_cast<uintptr_t>(mr->base())
						 : req.addr;
			bool in_range = req.addr >= (domain_->core_uses_virt_addr()
							     ? reinterpret_cast<uintptr_t>(mr->base())
							     : 0) &&
					start <= mr->length() && size <= mr->length() - start;
			if (in_range)
				target = mr->base() + start;
		}
		if (!mr || !target)
			status = -FI_EACCES;
		else if ((mr->access() & need) != need)
			status = -FI_EACCES;
		else {
			status = atomic_apply(req.op, req.datatype, target,
					      operand.empty() ? nullptr : operand.data(),
					      compare.empty() ? nullptr : compare.data(),
					      fetch ? old : nullptr, req.count);
		}
	}
	WireHeader h;
	h.op = WireOp::atomic_response;
	h.flags = fetch && status == 0 ? wire_flag::atomic_fetch : 0;
	h.msg_id = hdr.msg_id;
	h.payload_len = static_cast<uint32_t>(kAtomicResponseFixedSize +
					      (fetch && status == 0 ? size : 0));
	encode_header(h, buf->data);
	encode_atomic_response(status, buf->data + kWireHeaderSize);
	buf->len = kWireHeaderSize + h.payload_len;
	buf->op = op;
	op->kind = TxKind::control;
	op->conn = conn;
	op->prepared = buf;
	queue_op(conn, op);
}

void RxmEndpoint::handle_atomic_response(RxmConn *conn, const WireHeader &hdr,
					 std::span<const uint8_t> payload)
{
	TxOp *op = awaiting_op(conn, hdr.msg_id, TxKind::atomic);
	int32_t status = 0;
	std::span<const uint8_t> fetched;
	if (!op || decode_atomic_response(payload, &status, &fetched)) {
		RXM_WARN(FI_LOG_EP_DATA, "unexpected or malformed atomic response ignored\n");
		return;
	}
	if (status)
		op->error = status;
	else if (op->result_len && fetched.size() != op->result_len)
		op->error = -FI_EIO;
	else if (op->result_len)
		memcpy(op->result, fetched.data(), op->result_len);
	IntrusiveList<TxOp>::remove(op);
	maybe_finish(op);
}

ssize_t RxmEndpoint::atomicmsg(const struct fi_msg_atomic *msg, uint64_t flags)
{
	if (!flags_allowed(flags, kAtomicMsgFlags))
		return -FI_EBADFLAGS;
	return atomic_common(msg, nullptr, nullptr, flags, static_cast<int>(AtomicKind::write));
}

ssize_t RxmEndpoint::atomic(const void *buf, size_t count, void *desc, fi_addr_t dest,
			    uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
			    void *context)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	fi_rma_ioc rma{addr, count, key};
	fi_msg_atomic msg{&ioc, &desc, 1, dest, &rma, 1, datatype, op, context, 0};
	return atomic_common(&msg, nullptr, nullptr, tx_op_flags_,
			     static_cast<int>(AtomicKind::write));
}

ssize_t RxmEndpoint::inject_atomic(const void *buf, size_t count, fi_addr_t dest, uint64_t addr,
				   uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	fi_rma_ioc rma{addr, count, key};
	fi_msg_atomic msg{&ioc, nullptr, 1, dest, &rma, 1, datatype, op, nullptr, 0};
	return atomic_common(&msg, nullptr, nullptr, FI_INJECT | kNoCompletionFlag,
			     static_cast<int>(AtomicKind::write));
}

ssize_t RxmEndpoint::fetch_atomicmsg(const struct fi_msg_atomic *msg, struct fi_ioc *resultv,
				     void **, size_t result_count, uint64_t flags)
{
	if (!flags_allowed(flags, kAtomicMsgFlags))
		return -FI_EBADFLAGS;
	if (result_count != 1)
		return -FI_EINVAL;
	return atomic_common(msg, nullptr, resultv, flags, static_cast<int>(AtomicKind::fetch));
}

ssize_t RxmEndpoint::fetch_atomic(const void *buf, size_t count, void *desc, void *result,
				  void *, fi_addr_t dest, uint64_t addr, uint64_t key,
				  enum fi_datatype datatype, enum fi_op op, void *context)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	fi_ioc res{result, count};
	fi_rma_ioc rma{addr, count, key};
	fi_msg_atomic msg{&ioc, &desc, 1, dest, &rma, 1, datatype, op, context, 0};
	return atomic_common(&msg, nullptr, &res, tx_op_flags_, static_cast<int>(AtomicKind::fetch));
}

ssize_t RxmEndpoint::compare_atomicmsg(const struct fi_msg_atomic *msg,
				       const struct fi_ioc *comparev, void **, size_t compare_count,
				       struct fi_ioc *resultv, void **, size_t result_count,
				       uint64_t flags)
{
	if (!flags_allowed(flags, kAtomicMsgFlags))
		return -FI_EBADFLAGS;
	if (compare_count != 1 || result_count != 1)
		return -FI_EINVAL;
	return atomic_common(msg, comparev, resultv, flags, static_cast<int>(AtomicKind::compare));
}

ssize_t RxmEndpoint::compare_atomic(const void *buf, size_t count, void *desc, const void *compare,
				    void *, void *result, void *,
				    fi_addr_t dest, uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op, void *context)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	fi_ioc cmp{const_cast<void *>(compare), count};
	fi_ioc res{result, count};
	fi_rma_ioc rma{addr, count, key};
	fi_msg_atomic msg{&ioc, &desc, 1, dest, &rma, 1, datatype, op, context, 0};
	return atomic_common(&msg, &cmp, &res, tx_op_flags_, static_cast<int>(AtomicKind::compare));
}

static int valid(enum fi_datatype datatype, enum fi_op op, size_t *count, AtomicKind kind)
{
	if (!count)
		return -FI_EINVAL;
	if (!atomic_supported(static_cast<uint8_t>(op), static_cast<uint8_t>(datatype), kind))
		return -FI_EOPNOTSUPP;
	*count = atomic_max_count(static_cast<uint8_t>(datatype), kind, params().buffer_size);
	return 0;
}

int RxmEndpoint::atomicvalid(enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	return valid(datatype, op, count, AtomicKind::write);
}

int RxmEndpoint::fetch_atomicvalid(enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	return valid(datatype, op, count, AtomicKind::fetch);
}

int RxmEndpoint::compare_atomicvalid(enum fi_datatype datatype, enum fi_op op, size_t *count)
{
	return valid(datatype, op, count, AtomicKind::compare);
}

} // namespace rxm
