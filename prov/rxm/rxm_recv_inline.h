// The steps every small receive takes, inline in the files of the receive path (rxm_recv.cpp,
// rxm_shm_direct.cpp, rxm_direct_recv.cpp), where a call per step cost more than the step:
// taking and returning a RecvOp, the source of a connection's message, and an eager message
// into a plain posted receive (take_expected_eager).
#ifndef OFI_PROV_RXM_RECV_INLINE_H
#define OFI_PROV_RXM_RECV_INLINE_H

#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/util/counter.h"

#include <cstring>

namespace rxm {

// A free RecvOp is in its reset state (RecvOp::reset) but for what every post writes
// itself (the buffers, iov_count, capacity, context, op_flags, tagged and the match spec):
// the general path resets a receive when it frees it (free_recv), and a receive only
// posted and taken by take_expected_eager changed nothing else (release_taken_recv). So a
// post (fi_trecv) writes only its own fields, not the ~25 of a reset.
inline RecvOp *RxmEndpoint::alloc_recv()
{
	RecvOp *op = free_recvs_;
	if (!op)
		return nullptr;
	free_recvs_ = op->next_free;
	op->in_use = true;
	return op;
}

inline void RxmEndpoint::free_recv(RecvOp *op)
{
	if (op->own_mr_count) // only a rendezvous registers
		close_own_mrs(op->own_mr, op->own_shm_mr, &op->own_mr_count);
	op->reset();
	op->in_use = false;
	op->next_free = free_recvs_;
	free_recvs_ = op;
}

// free_recv of a receive that only a post and take_expected_eager touched (unlinked from
// the matcher): still in its reset state.
inline void RxmEndpoint::release_taken_recv(RecvOp *op)
{
	op->in_use = false;
	op->next_free = free_recvs_;
	free_recvs_ = op;
}

// source_of for every message: the connection's cached source while it holds (the AV lost
// no entry since, and the source is known), without the call; else the lookup.
inline fi_addr_t RxmEndpoint::known_source(RxmConn *conn)
{
	RxmAv *table = av();
	if (table && conn->source != FI_ADDR_NOTAVAIL &&
	    conn->source_generation == table->generation())
		return conn->source;
	return source_of(conn);
}

// An eager message (header checked by decode_plain_eager, payload whole in memory) taken by
// the first posted receive that accepts it, when that one is plain: one buffer that holds
// the whole message, not a multi-receive buffer. Matched, copied, completed and freed in
// one step: deliver_eager's common case with its completion written here, without the
// calls (complete_rx's steps: the entry unless FI_SELECTIVE_COMPLETION leaves it out, and
// the receive counter). False, with nothing changed, for anything else: deliver_eager and
// buffer_eager decide (truncation, multi-receive, several buffers, unexpected).
[[gnu::always_inline]] inline bool
RxmEndpoint::take_expected_eager(RxmConn *conn, const EagerHeader &e,
				 const uint8_t *payload, size_t len)
{
	bool tagged = e.flags & wire_flag::tagged;
	fi_addr_t source = known_source(conn);
	PostedRecv *posted = matcher_.find_posted(tagged ? MatchKind::tagged : MatchKind::msg,
						  source, e.tag);
	if (!posted)
		return false;
	auto *op = static_cast<RecvOp *>(posted->owner);
	if (op->multi || op->iov_count != 1 || len > op->capacity)
		return false;
	Matcher::remove_posted(posted);
	void *buf = op->iov[0].iov_base;
	if (len)
		memcpy(buf, payload, len);
	uint64_t flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG) |
			 ((e.flags & wire_flag::remote_cq_data) ? FI_REMOTE_CQ_DATA : 0);
	if (rx_entry_wanted(op->op_flags))
		rx_cq()->write(op->context, flags, len, buf, e.cq_data, e.tag, source);
	if (util::Counter *received = counter(kRecvCntr))
		received->increment();
	release_taken_recv(op);
	return true;
}

// A message offered where it lies (shm's ring slot, tcp's stage; rxm_shm_direct.cpp): inline
// in both offers' thunks. The common one, whole in one piece and as encode_eager_header
// writes it, is decoded inline (decode_plain_eager reads each byte once) and, expected by a
// plain receive, taken without building a WireHeader; the rest out of line.
[[gnu::always_inline]] inline bool
RxmEndpoint::take_from_shm(RxmConn *conn, const struct ofi_rx_inplace_request *req)
{
	uint32_t waiting = conn->inplace_rx_in_cq.load(std::memory_order_relaxed);
	if (waiting || conn->state == ConnState::closed || conn->rx_held || conn->sar.active())
		return waiting && defer_behind_deferred(conn, req, waiting);
	EagerHeader e;
	const auto *msg = static_cast<const uint8_t *>(req->msg);
	if (!msg || !decode_plain_eager(msg, req->len, &e))
		return take_general_from_shm(conn, req);
	size_t len = req->len - kWireHeaderSize;
	if (!take_expected_eager(conn, e, msg + kWireHeaderSize, len) &&
	    !take_eager(conn, plain_eager_header(e, len), {msg + kWireHeaderSize, len}))
		return false;
	taken_in_place_++;
	return true;
}

} // namespace rxm

#endif
