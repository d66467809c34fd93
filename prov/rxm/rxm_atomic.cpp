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

#include <algorithm>
#include <cstring>
#include <mutex>
#include <vector>

namespace rxm {

namespace {

// Element count over an ioc array of 1 to kAtomicMaxTargets entries, each with a buffer
// (unless buffers are not needed: the operands of FI_ATOMIC_READ); 0 when the array is
// not acceptable.
size_t ioc_total(const struct fi_ioc *iov, size_t n, bool need_buffers)
{
	if (!iov || n == 0 || n > kAtomicMaxTargets)
		return 0;
	size_t total = 0;
	for (size_t i = 0; i < n; i++) {
		if (need_buffers && !iov[i].addr && iov[i].count)
			return 0;
		total += iov[i].count;
	}
	return total;
}

// Copies 'count' elements out of the ioc array, in order, to 'out'.
void gather(const struct fi_ioc *iov, size_t n, size_t count, size_t elem, uint8_t *out)
{
	for (size_t i = 0; i < n && count; i++) {
		size_t take = std::min(iov[i].count, count);
		memcpy(out, iov[i].addr, take * elem);
		out += take * elem;
		count -= take;
	}
}

} // namespace

ssize_t RxmEndpoint::atomic_common(const struct fi_msg_atomic *msg, const struct fi_ioc *compare,
				   size_t compare_count, const struct fi_ioc *result,
				   size_t result_count, uint64_t flags, int kind_value)
{
	AtomicKind kind = static_cast<AtomicKind>(kind_value);
	if (!msg || !msg->rma_iov || msg->rma_iov_count == 0 ||
	    msg->rma_iov_count > kAtomicMaxTargets)
		return -FI_EINVAL;
	uint8_t op_code = static_cast<uint8_t>(msg->op);
	uint8_t datatype = static_cast<uint8_t>(msg->datatype);
	if (!atomic_supported(op_code, datatype, kind))
		return -FI_EOPNOTSUPP;
	// The local iocs, the target iocs, and the compare and result iocs each hold the same
	// number of elements in total (results may offer more room).
	size_t count = ioc_total(msg->msg_iov, msg->iov_count, op_code != FI_ATOMIC_READ);
	size_t elem = atomic_datatype_size(datatype);
	size_t target_total = 0;
	for (size_t i = 0; i < msg->rma_iov_count; i++) {
		if (msg->rma_iov[i].count == 0)
			return -FI_EINVAL;
		target_total += msg->rma_iov[i].count;
	}
	if (count == 0 || count != target_total ||
	    count > atomic_max_count(datatype, kind, eager_limit_))
		return -FI_EINVAL;
	if (kind != AtomicKind::write && ioc_total(result, result_count, true) < count)
		return -FI_EINVAL;
	if (kind == AtomicKind::compare && ioc_total(compare, compare_count, true) < count)
		return -FI_EINVAL;

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
	TxBuffer *buf = alloc_tx_buffer(conn);
	if (!buf) {
		free_op(op);
		return -FI_EAGAIN;
	}
	op->kind = TxKind::atomic;
	op->context = msg->context;
	op->cq_flags = FI_ATOMIC | (kind == AtomicKind::write ? FI_WRITE : FI_READ);
	op->report = tx_entry_wanted(flags) && !(flags & kNoCompletionFlag);
	op->conn = conn;
	// Fetched values are scattered over the result iocs (op->iov) when the answer comes.
	op->iov_count = 0;
	op->result_len = kind == AtomicKind::write ? 0 : count * elem;
	for (size_t i = 0, left = count; kind != AtomicKind::write && left; i++) {
		size_t take = std::min(result[i].count, left);
		op->iov[op->iov_count++] = {result[i].addr, take * elem};
		left -= take;
	}

	AtomicRequest req{op_code, datatype, static_cast<uint32_t>(msg->rma_iov[0].count),
			  msg->rma_iov[0].addr, msg->rma_iov[0].key};
	req.extra_count = static_cast<uint16_t>(msg->rma_iov_count - 1);
	for (size_t i = 1; i < msg->rma_iov_count; i++)
		req.extra[i - 1] = {msg->rma_iov[i].addr, msg->rma_iov[i].key,
				    static_cast<uint32_t>(msg->rma_iov[i].count)};
	size_t head = atomic_request_head_size(req);
	size_t operand_len = op_code == FI_ATOMIC_READ ? 0 : count * elem;
	size_t compare_len = kind == AtomicKind::compare ? count * elem : 0;
	WireHeader h;
	h.op = WireOp::atomic_request;
	h.flags = (kind != AtomicKind::write ? wire_flag::atomic_fetch : 0) |
		  (kind == AtomicKind::compare ? wire_flag::atomic_compare : 0);
	h.msg_id = (uint64_t(op->generation) << 32) | op->index;
	h.payload_len = static_cast<uint32_t>(head + operand_len + compare_len);
	h.total_len = count * elem;
	uint8_t *p = buf->data;
	encode_header(h, p);
	p += kWireHeaderSize;
	encode_atomic_request(req, p);
	p += head;
	if (operand_len)
		gather(msg->msg_iov, msg->iov_count, count, elem, p);
	if (compare_len)
		gather(compare, compare_count, count, elem, p + operand_len);
	buf->len = kWireHeaderSize + h.payload_len;
	buf->op = op;
	op->prepared = buf;
	queue_op(conn, op);
	return 0;
}

uint8_t *RxmEndpoint::registered_target(const AtomicTarget &target, size_t elem, uint64_t need)
{
	RxmMr *mr = domain_->find_mr(target.key);
	if (!mr || !mr->base() || !mr->grants(need))
		return nullptr;
	uint64_t base = domain_->core_uses_virt_addr() ? reinterpret_cast<uintptr_t>(mr->base()) : 0;
	uint64_t size = uint64_t(target.count) * elem;
	if (target.addr < base)
		return nullptr;
	uint64_t start = target.addr - base;
	if (start > mr->length() || size > mr->length() - start)
		return nullptr;
	return mr->base() + start;
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
	size_t elem = atomic_datatype_size(req.datatype);
	size_t size = size_t(req.total_count()) * elem;
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
		// Every target must lie inside a registration that allows what the op does; all
		// are checked before any is touched. Looked up and applied under the atomic lock,
		// which fi_close of an RxmMr also takes: once close returned, no atomic touches
		// the region.
		std::lock_guard atomic_guard(domain_->atomic_lock());
		uint64_t need = (req.op == FI_ATOMIC_READ ? 0 : FI_REMOTE_WRITE) |
				(fetch ? FI_REMOTE_READ : 0);
		uint8_t *targets[kAtomicMaxTargets];
		for (size_t i = 0; i < req.target_count() && !status; i++) {
			targets[i] = registered_target(req.target(i), elem, need);
			if (!targets[i])
				status = -FI_EACCES;
		}
		size_t done = 0;
		for (size_t i = 0; i < req.target_count() && !status; i++) {
			size_t n = req.target(i).count;
			status = atomic_apply(req.op, req.datatype, targets[i],
					      operand.empty() ? nullptr : operand.data() + done * elem,
					      compare.empty() ? nullptr : compare.data() + done * elem,
					      fetch ? old + done * elem : nullptr, n);
			done += n;
		}
		if (!status)
			count_remote(fetch ? FI_REMOTE_READ : FI_REMOTE_WRITE);
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
	if (status) {
		op->error = status;
	} else if (op->result_len && fetched.size() != op->result_len) {
		op->error = -FI_EIO;
	} else {
		const uint8_t *from = fetched.data();
		for (size_t i = 0; i < op->iov_count; i++) {
			memcpy(op->iov[i].iov_base, from, op->iov[i].iov_len);
			from += op->iov[i].iov_len;
		}
	}
	IntrusiveList<TxOp>::remove(op);
	maybe_finish(op);
}

// Every form ends in atomic_common; the single-buffer forms are one-ioc vectors.
static constexpr int kWrite = static_cast<int>(AtomicKind::write);
static constexpr int kFetch = static_cast<int>(AtomicKind::fetch);
static constexpr int kCompare = static_cast<int>(AtomicKind::compare);

ssize_t RxmEndpoint::atomicmsg(const struct fi_msg_atomic *msg, uint64_t flags)
{
	if (!flags_allowed(flags, kAtomicMsgFlags))
		return -FI_EBADFLAGS;
	return atomic_common(msg, nullptr, 0, nullptr, 0, flags, kWrite);
}

ssize_t RxmEndpoint::atomicv(const struct fi_ioc *iov, void **desc, size_t count, fi_addr_t dest,
			     uint64_t addr, uint64_t key, enum fi_datatype datatype,
			     enum fi_op op, void *context)
{
	fi_rma_ioc rma{addr, ioc_total(iov, count, false), key};
	fi_msg_atomic msg{iov, desc, count, dest, &rma, 1, datatype, op, context, 0};
	return atomic_common(&msg, nullptr, 0, nullptr, 0, tx_op_flags(), kWrite);
}

ssize_t RxmEndpoint::atomic(const void *buf, size_t count, void *desc, fi_addr_t dest,
			    uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
			    void *context)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	return atomicv(&ioc, &desc, 1, dest, addr, key, datatype, op, context);
}

ssize_t RxmEndpoint::inject_atomic(const void *buf, size_t count, fi_addr_t dest, uint64_t addr,
				   uint64_t key, enum fi_datatype datatype, enum fi_op op)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	fi_rma_ioc rma{addr, count, key};
	fi_msg_atomic msg{&ioc, nullptr, 1, dest, &rma, 1, datatype, op, nullptr, 0};
	return atomic_common(&msg, nullptr, 0, nullptr, 0, FI_INJECT | kNoCompletionFlag, kWrite);
}

ssize_t RxmEndpoint::fetch_atomicmsg(const struct fi_msg_atomic *msg, struct fi_ioc *resultv,
				     void **, size_t result_count, uint64_t flags)
{
	if (!flags_allowed(flags, kAtomicMsgFlags))
		return -FI_EBADFLAGS;
	return atomic_common(msg, nullptr, 0, resultv, result_count, flags, kFetch);
}

ssize_t RxmEndpoint::fetch_atomicv(const struct fi_ioc *iov, void **desc, size_t count,
				   struct fi_ioc *resultv, void **, size_t result_count,
				   fi_addr_t dest, uint64_t addr, uint64_t key,
				   enum fi_datatype datatype, enum fi_op op, void *context)
{
	fi_rma_ioc rma{addr, ioc_total(iov, count, false), key};
	fi_msg_atomic msg{iov, desc, count, dest, &rma, 1, datatype, op, context, 0};
	return atomic_common(&msg, nullptr, 0, resultv, result_count, tx_op_flags(), kFetch);
}

ssize_t RxmEndpoint::fetch_atomic(const void *buf, size_t count, void *desc, void *result,
				  void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
				  enum fi_datatype datatype, enum fi_op op, void *context)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	fi_ioc res{result, count};
	return fetch_atomicv(&ioc, &desc, 1, &res, &result_desc, 1, dest, addr, key, datatype,
			     op, context);
}

ssize_t RxmEndpoint::compare_atomicmsg(const struct fi_msg_atomic *msg,
				       const struct fi_ioc *comparev, void **, size_t compare_count,
				       struct fi_ioc *resultv, void **, size_t result_count,
				       uint64_t flags)
{
	if (!flags_allowed(flags, kAtomicMsgFlags))
		return -FI_EBADFLAGS;
	return atomic_common(msg, comparev, compare_count, resultv, result_count, flags,
			     kCompare);
}

ssize_t RxmEndpoint::compare_atomicv(const struct fi_ioc *iov, void **desc, size_t count,
				     const struct fi_ioc *comparev, void **, size_t compare_count,
				     struct fi_ioc *resultv, void **, size_t result_count,
				     fi_addr_t dest, uint64_t addr, uint64_t key,
				     enum fi_datatype datatype, enum fi_op op, void *context)
{
	fi_rma_ioc rma{addr, ioc_total(iov, count, false), key};
	fi_msg_atomic msg{iov, desc, count, dest, &rma, 1, datatype, op, context, 0};
	return atomic_common(&msg, comparev, compare_count, resultv, result_count, tx_op_flags(),
			     kCompare);
}

ssize_t RxmEndpoint::compare_atomic(const void *buf, size_t count, void *desc, const void *compare,
				    void *compare_desc, void *result, void *result_desc,
				    fi_addr_t dest, uint64_t addr, uint64_t key,
				    enum fi_datatype datatype, enum fi_op op, void *context)
{
	fi_ioc ioc{const_cast<void *>(buf), count};
	fi_ioc cmp{const_cast<void *>(compare), count};
	fi_ioc res{result, count};
	return compare_atomicv(&ioc, &desc, 1, &cmp, &compare_desc, 1, &res, &result_desc, 1,
			       dest, addr, key, datatype, op, context);
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
