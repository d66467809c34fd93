// Write-based rendezvous (FI_OFI_RXM_USE_RNDV_WRITE): the sender marks its rendezvous request;
// the matched receiver registers its buffer and answers rndv_write_ready with the buffer's
// descriptors; the sender RMA-writes the data and sends rndv_done (flagged rndv_write), which
// completes the receive. The sender's operation completes once its writes are done.
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

namespace rxm {

void RxmEndpoint::start_rndv(RecvOp *op, const uint64_t *cma_addr)
{
	if (op->wire_flags & wire_flag::rndv_write)
		expose_for_rndv_write(op);
	else
		start_rndv_reads(op, cma_addr);
}

bool RxmEndpoint::queue_control(RxmConn *conn, const WireHeader &hdr,
				std::span<const uint8_t> payload)
{
	TxOp *op = alloc_op();
	TxBuffer *buf = op ? alloc_tx_buffer() : nullptr;
	if (!buf) {
		if (op)
			free_op(op);
		return false;
	}
	WireHeader h = hdr;
	h.payload_len = static_cast<uint32_t>(payload.size());
	encode_header(h, buf->data);
	// An empty payload's data() may be null, which memcpy must not get even for 0 bytes.
	if (!payload.empty())
		memcpy(buf->data + kWireHeaderSize, payload.data(), payload.size());
	buf->len = kWireHeaderSize + payload.size();
	buf->op = op;
	op->kind = TxKind::control;
	op->conn = conn;
	op->prepared = buf;
	queue_op(conn, op);
	return true;
}

void RxmEndpoint::expose_for_rndv_write(RecvOp *op)
{
	uint64_t to_write = std::min<uint64_t>(op->total_len, op->capacity);
	RndvSegment segs[kRndvMaxSegments];
	size_t nsegs = 0;
	uint64_t left = to_write;
	for (size_t i = 0; i < op->iov_count && left && !op->error; i++) {
		size_t len = std::min<uint64_t>(op->iov[i].iov_len, left);
		if (!len)
			continue;
		RxmMr *mr = op->desc[i] ? RxmMr::from_desc(op->desc[i]) : nullptr;
		uint64_t key;
		// The peer writes through this key: the application's registration serves only if
		// it grants remote writes (a receive buffer's usually does not), else we register.
		if (mr && mr->grants(FI_REMOTE_WRITE)) {
			key = fi_mr_key(mr->core());
		} else {
			struct fid_mr *own = nullptr;
			int ret = domain_->register_internal(op->iov[i].iov_base, len,
							     FI_REMOTE_WRITE, &own);
			if (ret) {
				op->error = ret;
				break;
			}
			op->own_mr[op->own_mr_count++] = own;
			// Only the peer whose request this answers may write it (closed with the op).
			ret = domain_->bind_internal(own, op->conn->core_ep);
			// Our answer leaves over shm when our marker was queued before it: the
			// peer then writes over shm (writes_on_shm), into the twin.
			if (!ret && op->conn->shm_moved_queued)
				ret = twin_internal(op->conn, op->iov[i].iov_base, len,
						    FI_REMOTE_WRITE, own,
						    &op->own_shm_mr[op->own_mr_count - 1]);
			if (ret) {
				op->error = ret;
				break;
			}
			key = fi_mr_key(own);
		}
		uint64_t addr = domain_->core_uses_virt_addr()
					? reinterpret_cast<uintptr_t>(op->iov[i].iov_base)
					: 0;
		segs[nsegs++] = {addr, len, key};
		left -= len;
	}
	if (op->error || nsegs == 0) {
		// Nothing to expose (error or zero bytes): a single empty segment tells the sender
		// to finish without writing.
		to_write = 0;
		nsegs = 1;
		segs[0] = {0, 0, 0};
	}
	uint8_t payload[rndv_payload_size(kRndvMaxSegments)];
	encode_rndv({segs, nsegs}, payload);
	WireHeader h;
	h.op = WireOp::rndv_write_ready;
	h.msg_id = op->msg_id;
	h.total_len = to_write;
	if (!queue_control(op->conn, h, {payload, rndv_payload_size(nsegs)})) {
		op->error = -FI_ENOMEM;
		complete_recv(op);
		return;
	}
	op->conn->write_targets.push_back(op);
}

void RxmEndpoint::handle_rndv_write_ready(RxmConn *conn, const WireHeader &hdr,
					  std::span<const uint8_t> payload)
{
	TxOp *op = awaiting_op(conn, hdr.msg_id, TxKind::rndv);
	RndvSegment segs[kRndvMaxSegments];
	size_t nsegs = 0;
	if (!op || op->writing || !(op->hdr.flags & wire_flag::rndv_write) ||
	    hdr.total_len > op->total_len || decode_rndv(payload, hdr.total_len, segs, &nsegs)) {
		RXM_WARN(FI_LOG_EP_DATA, "unexpected or malformed rndv_write_ready ignored\n");
		return;
	}
	memcpy(op->remote, segs, sizeof(segs));
	op->remote_count = nsegs;
	// The receiver exposed its buffer on the path its answer took (expose_for_rndv_write).
	op->writes_on_shm = hdr.flags & kArrivedOnShm;
	op->write_total = hdr.total_len;
	op->write_issued = 0;
	op->writing = true;
	pending_writes_.push_back(op);
	post_pending_writes();
}

void RxmEndpoint::post_pending_writes()
{
	while (!pending_writes_.empty()) {
		TxOp *op = pending_writes_.front();
		RxmConn *conn = op->conn;
		if (conn->state == ConnState::closed || !op->in_use || !op->writing) {
			pending_writes_.pop_front();
			if (op->in_use && op->writing) {
				op->writing = false;
				if (!op->error)
					op->error = -FI_ECONNRESET;
				maybe_finish(op);
			}
			continue;
		}
		if (op->error || op->write_issued >= op->write_total) {
			pending_writes_.pop_front();
			// Tell the receiver its data is there (or that nothing more will come).
			WireHeader h;
			h.op = WireOp::rndv_done;
			h.flags = wire_flag::rndv_write;
			h.msg_id = op->hdr.msg_id;
			queue_control(conn, h, {});
			op->writing = false;
			if (op->linked())
				IntrusiveList<TxOp>::remove(op); // leaves the awaiting list
			maybe_finish(op);
			continue;
		}
		uint64_t pos = op->write_issued;
		size_t li = 0;
		uint64_t loff = pos;
		while (li < op->iov_count && loff >= op->iov[li].iov_len)
			loff -= op->iov[li++].iov_len;
		size_t ri = 0;
		uint64_t roff = pos;
		while (ri < op->remote_count && roff >= op->remote[ri].len)
			roff -= op->remote[ri++].len;
		if (li >= op->iov_count || ri >= op->remote_count) {
			op->error = -FI_EIO;
			continue;
		}
		uint64_t chunk = std::min(op->iov[li].iov_len - loff, op->remote[ri].len - roff);
		chunk = std::min(chunk, op->write_total - pos);
		size_t core_max = domain_->core_info()->ep_attr->max_msg_size;
		if (core_max && chunk > core_max)
			chunk = core_max;
		ssize_t ret = fi_write(rndv_ep(conn, op->writes_on_shm),
				       static_cast<uint8_t *>(op->iov[li].iov_base) + loff, chunk,
				       rndv_desc(op->desc[li], op->writes_on_shm), 0,
				       op->remote[ri].addr + roff, op->remote[ri].key, &op->core);
		if (ret == -FI_EAGAIN)
			return;
		pending_writes_.pop_front();
		if (ret) {
			op->error = static_cast<int>(ret);
			pending_writes_.push_front(op);
			continue;
		}
		op->write_issued += chunk;
		op->outstanding++; // one write at a time; on_rma_done queues the next
	}
}

} // namespace rxm
