// Messages consumed in shm's ring (prov/util/rx_inplace_ops.h), on the shm endpoint of a
// moved peer (tcp;ofi_rxm) and on the core endpoint when shm is the core (shm;ofi_rxm):
// during shm's progress, each message that fits one ring slot is offered to rxm where it
// lies; an eager one is decoded, matched and copied once, from the ring into the
// application's buffer (or, unexpected, into rxm's unexpected store), and its slot released.
// A message over several slots (8-16 KiB eager) is offered in pieces once all its slots
// are in the ring, and taken when a posted receive matches it: copied slot by slot into
// the application's buffer (take_pieces).
// Before, shm copied it into one of the connection's receive buffers and wrote a shm CQ
// entry, which rxm read back, decoded, copied out of and reposted to shm (`repost`): two
// copies, a CQ round trip and a fi_recv per message. Anything else (other operations,
// delivery-complete senders, a peer at its unexpected budget, a malformed message) is
// declined and takes a receive buffer as before; the error paths stay there.
//
// The slot is the peer's memory: the header is copied out before it is decoded, and the
// payload is only copied (a peer rewriting it meanwhile garbles only its own message); the
// length is shm's, checked against the slot.
//
// Order: one connection's messages must be matched in order. A declined message that takes
// a receive buffer (shm shows the ones it cannot offer too: longer than a slot) is matched
// only when rxm reads its shm CQ entry, so until then
// (inplace_rx_in_cq) every later message of the connection is declined too. Not over a core
// with credit flow control: its credits come back with reposted buffers. Over a core's shared
// receive context (tcp) the order is kept as for its direct receives (srx_consume_thunk).
//
// Locks: the offer runs inside shm's progress, under the shm domain's lock (shared by the
// endpoints of an rxm domain), maybe on another endpoint's thread: it only tries this
// endpoint's lock, as direct receives over tcp do (rxm_direct_recv.cpp).
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/rxm/rxm_recv_inline.h"

#include "prov/util/rx_inplace_ops.h"

#include <cstring>

namespace rxm {

void RxmEndpoint::start_shm_direct(RxmConn *conn)
{
	if (shm_ && shm_->inplace_ops && conn->shm_ep && params().direct_recv)
		shm_->inplace_ops->set_consumer(conn->shm_ep, shm_consume_thunk, conn);
}

void RxmEndpoint::stop_shm_direct(RxmConn *conn)
{
	if (shm_ && shm_->inplace_ops && conn->shm_ep)
		shm_->inplace_ops->set_consumer(conn->shm_ep, nullptr, nullptr);
}

void RxmEndpoint::start_core_inplace(RxmConn *conn)
{
	const ofi_rx_inplace_ops *ops = domain_->rx_inplace();
	if (ops && conn->core_ep && (!srx_ || direct_recv_) && !domain_->flow_ctrl() &&
	    params().direct_recv)
		conn->core_inplace = ops->set_consumer(conn->core_ep, srx_ ? srx_consume_thunk :
						       shm_consume_thunk, conn) == 0;
}

void RxmEndpoint::stop_core_inplace(RxmConn *conn)
{
	if (conn->core_inplace && conn->core_ep)
		domain_->rx_inplace()->set_consumer(conn->core_ep, nullptr, nullptr);
	conn->core_inplace = false;
}

// consume_shm is this thunk's only step: inline, one call less per message.
[[gnu::always_inline]] inline bool RxmEndpoint::consume_shm(RxmConn *conn, const struct ofi_rx_inplace_request *req)
{
	bool taken = false;
	if (lock_.try_lock()) {
		taken = take_from_shm(conn, req);
		lock_.unlock();
	}
	if (!taken && req->rx_context)
		conn->inplace_rx_in_cq.fetch_add(1, std::memory_order_relaxed);
	return taken;
}

int RxmEndpoint::shm_consume_thunk(void *arg, const struct ofi_rx_inplace_request *req) noexcept
{
	try {
		auto *conn = static_cast<RxmConn *>(arg);
		return conn->ep->consume_shm(conn, req) ? 1 : 0;
	} catch (...) {
		return 0; // declined: a receive buffer takes it as before
	}
}

// take_from_shm (rxm_recv_inline.h) of anything but a plain eager message whole in one piece.
bool RxmEndpoint::take_general_from_shm(RxmConn *conn, const struct ofi_rx_inplace_request *req)
{
	// The message whole in one piece, or (a message over several shm slots) in pieces.
	const void *first = req->msg;
	size_t first_len = req->len;
	if (!first && req->piece_count) {
		first = req->pieces[0].iov_base;
		first_len = req->pieces[0].iov_len;
	}
	if (!first || first_len < kWireHeaderSize)
		return false;
	// Decoded from one copy of its bytes (decode_message_header): the peer may rewrite them.
	WireHeader hdr;
	if (decode_message_header(static_cast<const uint8_t *>(first), req->len, &hdr))
		return false;
	if (req->msg && shm_defer_ok_ &&
	    (hdr.op == WireOp::rndv_request || hdr.op == WireOp::rndv_done))
		return defer_shm_control(conn, req);
	if (hdr.op != WireOp::eager || (hdr.flags & wire_flag::delivery_complete))
		return false;
	if (!req->msg) {
		if (!take_pieces(conn, hdr, req->pieces, req->piece_count))
			return false;
		taken_in_place_++;
		return true;
	}
	size_t payload_len = req->len - kWireHeaderSize;
	if (!take_eager(conn, hdr, {static_cast<const uint8_t *>(req->msg) + kWireHeaderSize,
				    payload_len}))
		return false;
	taken_in_place_++;
	return true;
}

// An eager message whole in memory (not delivery-complete): into a posted receive, or
// buffered as unexpected unless that would take the peer over its budget (holding the peer,
// rxm_unexpected_budget.cpp, may call into a core): then false, declined.
bool RxmEndpoint::take_eager(RxmConn *conn, const WireHeader &hdr, std::span<const uint8_t> payload)
{
	if (deliver_eager(conn, hdr, payload))
		return true;
	if (conn->unexpected_bytes + sizeof(Unexpected) + payload.size() + kWireHeaderSize >
	    params().unexpected_budget)
		return false;
	buffer_eager(conn, hdr, payload);
	return true;
}

bool RxmEndpoint::take_pieces(RxmConn *conn, const WireHeader &hdr, const struct iovec *pieces,
			      size_t count)
{
	// Only into a posted receive, copied piece by piece (the ring's slots -> the
	// application's buffer, one copy). An unexpected one is declined: it takes a receive
	// buffer as before, so the unexpected store keeps one contiguous copy per message.
	MatchKind kind = (hdr.flags & wire_flag::tagged) ? MatchKind::tagged : MatchKind::msg;
	PostedRecv *posted = matcher_.find_posted(kind, source_of(conn), hdr.tag);
	RecvOp *receiver = posted ? claim_receiver(static_cast<RecvOp *>(posted->owner),
						   hdr.total_len)
				  : nullptr;
	if (!receiver)
		return false;
	start_message(receiver, conn, hdr);
	uint64_t offset = 0;
	for (size_t i = 0; i < count; i++) {
		std::span<const uint8_t> piece{static_cast<const uint8_t *>(pieces[i].iov_base),
					       pieces[i].iov_len};
		if (i == 0)
			piece = piece.subspan(kWireHeaderSize);
		place(receiver, offset, piece);
		offset += piece.size();
	}
	complete_recv(receiver);
	return true;
}

// A same-host rendezvous (rxm_rndv_cma.cpp) is a request and a done through the ring. Taken
// through a receive buffer, each cost shm a receive, a copy into it and a CQ entry, and rxm
// a CQ read, a decode and a repost (~700 instructions each, a fifth of a switched 64 KiB
// message). Here the message (at most a rendezvous request with its same-host offer) is
// copied out and its slot released; the connection's later messages are declined into
// receive buffers meanwhile (inplace_rx_in_cq), and shm_drain_cq handles the copies before
// it reads those from the shm CQ, so the connection's order holds.
bool RxmEndpoint::defer_shm_control(RxmConn *conn, const struct ofi_rx_inplace_request *req)
{
	if (req->len > sizeof(ShmDeferred::bytes))
		return false;
	ShmDeferred &d = shm_deferred_.emplace_back();
	d.conn = conn;
	d.len = req->len;
	memcpy(d.bytes, req->msg, req->len);
	conn->inplace_rx_in_cq.fetch_add(1, std::memory_order_relaxed); // later ones wait
	taken_in_place_++;
	return true;
}

// A control message right behind deferred ones of its connection (a ping-pong of rendezvous
// finds the done of its send and the peer's next request in one pass): deferred after them
// when nothing else of the connection waits (waiting counts only deferred messages), as the
// list keeps their order. Otherwise, or for anything but a request or a done, declined into
// a receive buffer (~700 instructions more) as every later message while some wait.
bool RxmEndpoint::defer_behind_deferred(RxmConn *conn, const struct ofi_rx_inplace_request *req,
					uint32_t waiting)
{
	if (!shm_defer_ok_ || !req->msg || conn->state == ConnState::closed || conn->rx_held ||
	    conn->sar.active())
		return false;
	uint32_t deferred = 0;
	for (const ShmDeferred &d : shm_deferred_)
		deferred += d.conn == conn;
	WireHeader hdr;
	if (deferred != waiting ||
	    decode_message_header(static_cast<const uint8_t *>(req->msg), req->len, &hdr) ||
	    (hdr.op != WireOp::rndv_request && hdr.op != WireOp::rndv_done))
		return false;
	return defer_shm_control(conn, req);
}

size_t RxmEndpoint::run_shm_deferred()
{
	// Nothing is deferred while this runs (shm_defer_ok_ is clear): the list holds still.
	size_t count = shm_deferred_.size();
	for (ShmDeferred &d : shm_deferred_) {
		on_inplace_buffer_back(d.conn);
		handle_shm_control(d.conn, {d.bytes, d.len});
	}
	shm_deferred_.clear();
	return count;
}

// on_rx_buffer's steps for a message of a moved peer's shm endpoint, without the buffer.
void RxmEndpoint::handle_shm_control(RxmConn *conn, std::span<const uint8_t> message)
{
	WireHeader hdr;
	bool malformed = decode_message(message, &hdr) != 0;
	if (admit_message(conn, &hdr, malformed, message.size(), true))
		handle_message(conn, hdr, message.subspan(kWireHeaderSize));
}

void RxmEndpoint::on_inplace_buffer_back(RxmConn *conn)
{
	if (conn->inplace_rx_in_cq.load(std::memory_order_relaxed))
		conn->inplace_rx_in_cq.fetch_sub(1, std::memory_order_relaxed);
}

} // namespace rxm
