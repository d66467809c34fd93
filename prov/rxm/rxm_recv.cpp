// Receiving: posting receives (plain, multi-receive, peek/claim/discard), matching incoming
// messages against them, buffering unexpected messages, reassembling SAR segments and pulling
// rendezvous data with RMA reads.
#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_flags.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/rxm/rxm_recv_inline.h"

#include <rdma/fi_errno.h>

#include <cstring>

namespace rxm {

namespace {

MatchKind kind_of(bool tagged) { return tagged ? MatchKind::tagged : MatchKind::msg; }

uint64_t recv_cq_flags(const RecvOp *op)
{
	uint64_t flags = FI_RECV | (op->tagged ? FI_TAGGED : FI_MSG);
	if (op->wire_flags & wire_flag::remote_cq_data)
		flags |= FI_REMOTE_CQ_DATA;
	return flags;
}

// What a posted receive keeps of its call: the caller's context and flags, and what the
// matcher compares (recv_common and post_one fill in the buffers their own way).
void set_receive(RecvOp *op, void *context, uint64_t flags, bool tagged, const MatchSpec &spec)
{
	op->context = context;
	op->op_flags = flags;
	op->tagged = tagged;
	op->match.context = context;
	op->match.spec = spec;
}

} // namespace

fi_addr_t RxmEndpoint::source_of(RxmConn *conn)
{
	if (!av())
		return FI_ADDR_NOTAVAIL;
	uint64_t generation = av()->generation();
	// Entries may be inserted after the connection came up: an unknown source is looked
	// up again once something was inserted; removals bump the generation. Both are read
	// before the lookup, so one racing with it makes the next message look again.
	if (conn->source_generation != generation ||
	    (conn->source == FI_ADDR_NOTAVAIL && conn->source_insertions != av()->insertions())) {
		conn->source_insertions = av()->insertions();
		conn->source = av()->find(conn->peer_name.view());
		conn->source_generation = generation;
	}
	return conn->source;
}

size_t RxmEndpoint::place(RecvOp *op, uint64_t offset, std::span<const uint8_t> bytes)
{
	size_t copied = 0;
	uint64_t skip = offset;
	const uint8_t *src = bytes.data();
	size_t left = bytes.size();
	for (size_t i = 0; i < op->iov_count && left; i++) {
		size_t len = op->iov[i].iov_len;
		if (skip >= len) {
			skip -= len;
			continue;
		}
		size_t n = std::min<size_t>(len - skip, left);
		memcpy(static_cast<uint8_t *>(op->iov[i].iov_base) + skip, src, n);
		src += n;
		left -= n;
		copied += n;
		skip = 0;
	}
	return copied;
}

void RxmEndpoint::start_message(RecvOp *op, RxmConn *conn, const WireHeader &hdr)
{
	op->conn = conn;
	op->source = known_source(conn);
	op->tag = hdr.tag;
	op->cq_data = hdr.cq_data;
	op->wire_flags = hdr.flags;
	op->total_len = hdr.total_len;
	op->msg_id = hdr.msg_id;
}

// The receive that takes a message: the posted receive itself, or a fresh slice of a
// multi-receive buffer. nullptr when no slice can be allocated.
RecvOp *RxmEndpoint::claim_receiver(RecvOp *posted, uint64_t msg_len)
{
	if (!posted->multi) {
		if (posted->match.linked())
			Matcher::remove_posted(&posted->match);
		return posted;
	}
	RecvOp *slice = alloc_recv();
	if (!slice)
		return nullptr;
	MultiRecvBuffer::Slice s = posted->multi_buf.take(msg_len);
	slice->iov[0] = {s.data, s.len};
	slice->desc[0] = posted->desc[0];
	slice->iov_count = 1;
	slice->capacity = s.len;
	slice->multi_parent = posted;
	slice->context = posted->context;
	slice->op_flags = posted->op_flags;
	slice->tagged = posted->tagged;
	if (posted->multi_buf.retired() && posted->match.linked())
		Matcher::remove_posted(&posted->match);
	return slice;
}

void RxmEndpoint::complete_recv(RecvOp *op)
{
	// FI_DELIVERY_COMPLETE senders wait until the data is in the application's buffer.
	if ((op->wire_flags & wire_flag::delivery_complete) && op->conn &&
	    op->conn->state != ConnState::closed)
		send_control(op->conn, WireOp::delivery_ack, op->msg_id);
	uint64_t flags = recv_cq_flags(op);
	RecvOp *parent = op->multi_parent;
	bool release = parent && parent->multi_buf.finish();
	if (release)
		flags |= FI_MULTI_RECV;
	size_t len = std::min<uint64_t>(op->total_len, op->capacity);
	void *buf = op->iov_count ? op->iov[0].iov_base : nullptr;
	if (op->error)
		fail_rx(op->context, flags, op->error, op->error, 0, nullptr, 0, op->cq_data,
			op->tag);
	else if (op->total_len > op->capacity)
		fail_rx(op->context, flags, FI_ETRUNC, 0, len, nullptr,
			op->total_len - op->capacity, op->cq_data, op->tag);
	else
		complete_rx(op->op_flags, op->context, flags, len, buf, op->cq_data, op->tag,
			    op->source);
	free_recv(op);
	if (release)
		free_recv(parent);
}

ssize_t RxmEndpoint::recv_common(const struct iovec *iov, void **desc, size_t count,
				 fi_addr_t src, uint64_t tag, uint64_t ignore, void *context,
				 uint64_t flags, bool tagged)
{
	if (count > kRndvMaxSegments || (count && !iov))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
	if (!(info_->caps & FI_DIRECTED_RECV))
		src = FI_ADDR_UNSPEC;
	bool multi = (flags & FI_MULTI_RECV) != 0;
	if (multi && (tagged || count != 1))
		return -FI_EINVAL;
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_EOPBADSTATE;
	MatchKind kind = kind_of(tagged);

	if (flags & FI_CLAIM) {
		UnexpectedMsg *m = matcher_.find_claimed(kind, context);
		if (!m)
			return -FI_EINVAL; // nothing was reserved by FI_PEEK|FI_CLAIM with this context
		Unexpected *u = static_cast<Unexpected *>(m->owner);
		Matcher::remove_unexpected(m);
		if (flags & FI_DISCARD) {
			if (u->protocol == WireOp::rndv_request)
				finish_discarded_rndv(u);
			else if (u->wire_flags & wire_flag::delivery_complete)
				send_control(u->conn, WireOp::delivery_ack, u->msg_id);
			if (u->conn->sar_unexpected == u)
				u->conn->sar_unexpected = nullptr;
			if (rx_cq())
				rx_cq()->write(context, FI_RECV | (tagged ? FI_TAGGED : FI_MSG), 0, nullptr,
					      u->cq_data, u->match.tag, source_of(u->conn));
			release_unexpected(u);
			return 0;
		}
		RecvOp *op = alloc_recv();
		if (!op) {
			matcher_.add_unexpected(kind, m); // keep the reservation
			return -FI_EAGAIN;
		}
		op->capacity = 0; // a post's own fields (alloc_recv)
		for (size_t i = 0; i < count; i++) {
			op->iov[i] = iov[i];
			op->desc[i] = desc ? desc[i] : nullptr;
			op->capacity += iov[i].iov_len;
		}
		op->iov_count = count;
		op->context = context;
		op->op_flags = flags;
		op->tagged = tagged;
		consume_unexpected(op, u);
		return 0;
	}

	RecvOp *op = alloc_recv();
	if (!op)
		return -FI_EAGAIN;
	op->capacity = 0; // a post's own fields (alloc_recv)
	for (size_t i = 0; i < count; i++) {
		op->iov[i] = iov[i];
		op->desc[i] = desc ? desc[i] : nullptr;
		op->capacity += iov[i].iov_len;
	}
	op->iov_count = count;
	set_receive(op, context, flags, tagged, {src, tagged ? tag : 0, tagged ? ignore : ~0ULL});
	if (multi) {
		op->multi = true;
		op->multi_buf = MultiRecvBuffer(static_cast<uint8_t *>(iov[0].iov_base),
						iov[0].iov_len, min_multi_recv());
	}

	// Messages that arrived first are taken in arrival order.
	for (;;) {
		UnexpectedMsg *m = matcher_.find_unexpected(kind, op->match.spec);
		if (!m)
			break;
		Unexpected *u = static_cast<Unexpected *>(m->owner);
		RecvOp *receiver = claim_receiver(op, u->total_len);
		if (!receiver)
			break;
		Matcher::remove_unexpected(m);
		consume_unexpected(receiver, u);
		if (!multi || op->multi_buf.retired())
			return 0;
	}
	matcher_.post(kind, &op->match);
	return 0;
}

// A discarded rendezvous still releases its sender: read mode with rndv_done, write mode with
// an empty rndv_write_ready.
void RxmEndpoint::finish_discarded_rndv(Unexpected *u)
{
	if (!(u->wire_flags & wire_flag::rndv_write)) {
		// The same-host flag tells the sender we pull its offers: a discard says nothing
		// against that.
		bool pulls = (u->wire_flags & wire_flag::cma) && u->conn->cma_peer_pid > 0;
		send_control(u->conn, WireOp::rndv_done, u->msg_id, pulls ? wire_flag::cma : 0);
		return;
	}
	RndvSegment empty{0, 0, 0};
	uint8_t payload[rndv_payload_size(1)];
	encode_rndv({&empty, 1}, payload);
	WireHeader h;
	h.op = WireOp::rndv_write_ready;
	h.msg_id = u->msg_id;
	queue_control(u->conn, h, payload);
}

void RxmEndpoint::consume_unexpected(RecvOp *op, Unexpected *u)
{
	WireHeader hdr;
	hdr.tag = u->match.tag;
	hdr.cq_data = u->cq_data;
	hdr.flags = u->wire_flags;
	hdr.total_len = u->total_len;
	hdr.msg_id = u->msg_id;
	start_message(op, u->conn, hdr);
	switch (u->protocol) {
	case WireOp::rndv_request:
		memcpy(op->rndv, u->rndv, sizeof(op->rndv));
		op->rndv_count = u->rndv_count;
		start_rndv(op, u->cma_addr);
		break;
	case WireOp::sar_segment:
		place(op, 0, u->data);
		if (!u->complete) {
			// The rest of the segments go straight to the receive.
			u->conn->sar_target = op;
			u->conn->sar_unexpected = nullptr;
		} else {
			complete_recv(op);
		}
		break;
	default:
		place(op, 0, u->data);
		complete_recv(op);
		break;
	}
	release_unexpected(u);
}

ssize_t RxmEndpoint::peek(const struct fi_msg_tagged *msg, uint64_t flags)
{
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_EOPBADSTATE;
	fi_addr_t src = (info_->caps & FI_DIRECTED_RECV) ? msg->addr : FI_ADDR_UNSPEC;
	MatchSpec spec{src, msg->tag, msg->ignore};
	UnexpectedMsg *m = matcher_.find_unexpected(MatchKind::tagged, spec);
	if (!m) {
		if (rx_cq())
			rx_cq()->write_error(msg->context, FI_RECV | FI_TAGGED, FI_ENOMSG, 0, 0, 0,
					    msg->tag, 0);
		return 0;
	}
	Unexpected *u = static_cast<Unexpected *>(m->owner);
	uint64_t cq_flags = FI_RECV | FI_TAGGED;
	if (u->wire_flags & wire_flag::remote_cq_data)
		cq_flags |= FI_REMOTE_CQ_DATA;
	fi_addr_t source = source_of(u->conn);
	uint64_t tag = m->tag, data = u->cq_data, len = u->total_len;
	if (flags & FI_DISCARD) {
		Matcher::remove_unexpected(m);
		if (u->protocol == WireOp::rndv_request)
			finish_discarded_rndv(u);
		else if (u->wire_flags & wire_flag::delivery_complete)
			send_control(u->conn, WireOp::delivery_ack, u->msg_id);
		if (u->conn->sar_unexpected == u)
			u->conn->sar_unexpected = nullptr;
		release_unexpected(u);
		len = 0;
	} else if (flags & FI_CLAIM) {
		m->claim_context = msg->context;
	}
	if (rx_cq())
		rx_cq()->write(msg->context, cq_flags, len, nullptr, data, tag, source);
	return 0;
}

ssize_t RxmEndpoint::cancel(void *context)
{
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_ENOENT;
	PostedRecv *r = matcher_.cancel(context);
	if (!r)
		return cancel_queued_send(context);
	RecvOp *op = static_cast<RecvOp *>(r->owner);
	if (op->multi && op->multi_buf.in_flight()) {
		// Slices still being filled release the buffer when they finish.
		op->multi_buf.retire();
		return 0;
	}
	uint64_t flags = FI_RECV | (op->tagged ? FI_TAGGED : FI_MSG) | (op->multi ? FI_MULTI_RECV : 0);
	if (rx_cq())
		rx_cq()->write_error(op->context, flags, FI_ECANCELED, 0, 0, 0, 0, 0);
	free_recv(op);
	return 0;
}

// fi_cancel(3) of a send, RMA or atomic still waiting in a connection's queue with nothing of
// it handed to the core: it never takes place and completes with FI_ECANCELED. Anything else
// (already on the wire, or unknown) is not cancelled and cancel says so: reporting success
// for an operation that then takes place anyway would be a lie an application acts on.
ssize_t RxmEndpoint::cancel_queued_send(void *context)
{
	if (!context)
		return -FI_ENOENT; // fi_cancel(3): operations without a context cannot be cancelled
	for (auto &conn : conns_) {
		if (!conn || conn->backlog.empty())
			continue;
		TxOp *op = conn->backlog.find([context](const TxOp &o) {
			return o.context == context && o.kind != TxKind::control && !o.outstanding &&
			       !o.queued_len;
		});
		if (op) {
			fail_op(op, -FI_ECANCELED);
			return 0;
		}
	}
	return -FI_ENOENT;
}

bool RxmEndpoint::repost(RxBuffer *buf)
{
	RxmConn *conn = buf->conn;
	if (!conn && batching_srx_reposts_) {
		srx_reposts_.push_back(buf); // reserved for all of them: no allocation
		return false;
	}
	if (!conn) {
		// A shared buffer: back to the endpoint's shared receive context.
		void *desc = srx_mr_ ? fi_mr_desc(srx_mr_) : nullptr;
		ssize_t ret = fi_recv(srx_, buf->data, kWireHeaderSize + eager_limit_, desc, 0,
				      &buf->core);
		if (ret)
			RXM_WARN(FI_LOG_EP_DATA, "reposting a shared receive buffer: %s\n",
				 fi_strerror(static_cast<int>(-ret)));
		return false; // shared buffers carry no connection credits (cores without flow control)
	}
	struct fid_ep *ep = buf->on_shm ? conn->shm_ep : conn->core_ep;
	if (conn->state == ConnState::closed || !ep)
		return false;
	if (conn->rx_held) {
		// Over its unexpected budget: the peer gets this buffer (and its credit) back
		// when receives took its messages (maybe_release_peer).
		conn->held_rx.push_back(buf);
		return false;
	}
	void *desc = conn->rx_mr && !buf->on_shm ? fi_mr_desc(conn->rx_mr) : nullptr;
	ssize_t ret = fi_recv(ep, buf->data, kWireHeaderSize + eager_limit_, desc, 0, &buf->core);
	// -FI_ENOTCONN: the core's stream ended and its FI_SHUTDOWN is on the way (the
	// messages drained before it are still handled); nothing to warn about.
	if (ret && ret != -FI_ENOTCONN)
		RXM_WARN(FI_LOG_EP_DATA, "reposting a receive buffer: %s\n",
			 fi_strerror(static_cast<int>(-ret)));
	return ret == 0;
}

void RxmEndpoint::on_rx_buffer(RxBuffer *buf, size_t len)
{
	if (!buf->conn)
		on_srx_buffer_back(buf); // handled now: later messages may be placed directly
	else if (buf->on_shm || buf->conn->core_inplace)
		on_inplace_buffer_back(buf->conn); // ... or consumed in shm's ring
	WireHeader hdr;
	std::span<const uint8_t> message(buf->data, len);
	bool malformed = decode_message(message, &hdr) != 0;
	// Shared buffers learn the connection from the id the sender stamped on the message.
	RxmConn *conn = buf->conn ? buf->conn : malformed ? nullptr : conn_by_id(hdr.conn_id);
	if (!conn) {
		RXM_WARN(FI_LOG_EP_DATA, "%s message of %zu bytes on a shared receive buffer "
					 "dropped\n", malformed ? "malformed" : "unroutable", len);
		repost(buf);
		return;
	}
	if (!admit_message(conn, &hdr, malformed, len, buf->on_shm)) {
		if (!buf->conn)
			repost(buf);
		return;
	}
	handle_message(conn, hdr, message.subspan(kWireHeaderSize));
	if (repost(buf))
		on_buffer_reposted(conn);
}

bool RxmEndpoint::admit_message(RxmConn *conn, WireHeader *hdr, bool malformed, size_t len,
				bool on_shm)
{
	// Messages of a failed connection are dropped: its operations already ended in error,
	// and it has no core endpoint left to answer on. (An orderly FI_SHUTDOWN drains the core
	// CQ before failing the connection, so what the peer sent before closing is delivered.)
	if (conn->state == ConnState::closed)
		return false;
	if (malformed) {
		RXM_WARN(FI_LOG_EP_DATA, "malformed message of %zu bytes from a peer: closing "
					 "its connection\n", len);
		fail_conn(conn, -FI_EIO);
		return false;
	}
	if (on_shm)
		hdr->flags |= kArrivedOnShm; // its rendezvous transfers take shm too (rndv_ep)
	return !hdr->credits || take_returned_credits(conn, hdr->credits); // rxm_flow_ctrl.cpp
}

void RxmEndpoint::handle_message(RxmConn *conn, const WireHeader &hdr,
				 std::span<const uint8_t> payload)
{
	// A sender finishes a segmented message before it starts the next one.
	if (conn->sar.active() && hdr.op != WireOp::sar_segment && hdr.op != WireOp::rndv_done &&
	    hdr.op != WireOp::credit_update) {
		RXM_WARN(FI_LOG_EP_DATA, "message interleaved with a segmented one\n");
		fail_conn(conn, -FI_EIO);
		return;
	}
	switch (hdr.op) {
	case WireOp::eager:
	case WireOp::rndv_request:
		handle_first(conn, hdr, payload);
		break;
	case WireOp::sar_segment:
		handle_sar_segment(conn, hdr, payload);
		break;
	case WireOp::rndv_done:
		handle_rndv_done(conn, hdr);
		break;
	case WireOp::delivery_ack: {
		if (hdr.msg_id == kLivenessProbeMsgId)
			break; // the sender only tests that this connection is alive
		TxOp *op = awaiting_op(conn, hdr.msg_id, TxKind::eager);
		if (!op) {
			RXM_WARN(FI_LOG_EP_DATA, "unexpected delivery_ack ignored\n");
			break;
		}
		IntrusiveList<TxOp>::remove(op);
		maybe_finish(op);
		break;
	}
	case WireOp::rndv_write_ready:
		handle_rndv_write_ready(conn, hdr, payload);
		break;
	case WireOp::credit_update:
		handle_credit_update(conn, hdr);
		break;
	case WireOp::atomic_request:
		handle_atomic_request(conn, hdr, payload);
		break;
	case WireOp::atomic_response:
		handle_atomic_response(conn, hdr, payload);
		break;
	case WireOp::collective:
		handle_collective(conn, hdr, payload);
		break;
	case WireOp::shm_offer:
		handle_shm_offer(conn, payload);
		break;
	case WireOp::shm_moved:
		handle_shm_moved(conn);
		break;
	}
}

// An eager message to a posted receive. The common case, one receive taking the whole
// message (not a multi-receive buffer, no FI_DELIVERY_COMPLETE sender), is matched, copied,
// completed and freed here without the per-message state of start_message/complete_recv,
// which segmented, rendezvous and multi-receive messages need: same completion, same
// truncation entry. False when no posted receive takes it (the caller buffers it).
bool RxmEndpoint::deliver_eager(RxmConn *conn, const WireHeader &hdr,
				std::span<const uint8_t> payload)
{
	fi_addr_t source = known_source(conn);
	PostedRecv *posted = matcher_.find_posted(kind_of(hdr.flags & wire_flag::tagged), source,
						  hdr.tag);
	if (!posted)
		return false;
	auto *op = static_cast<RecvOp *>(posted->owner);
	if (op->multi || (hdr.flags & wire_flag::delivery_complete)) {
		RecvOp *receiver = claim_receiver(op, hdr.total_len);
		if (!receiver)
			return false;
		start_message(receiver, conn, hdr);
		place(receiver, 0, payload);
		complete_recv(receiver);
		return true;
	}
	Matcher::remove_posted(posted);
	uint64_t flags = FI_RECV | (op->tagged ? FI_TAGGED : FI_MSG) |
			 ((hdr.flags & wire_flag::remote_cq_data) ? FI_REMOTE_CQ_DATA : 0);
	size_t len = payload.size(); // == hdr.total_len: decode checked it for eager
	if (op->iov_count == 1 && len && len <= op->iov[0].iov_len)
		memcpy(op->iov[0].iov_base, payload.data(), len);
	else
		place(op, 0, payload); // several buffers, or cut to what fits
	if (len > op->capacity)
		fail_rx(op->context, flags, FI_ETRUNC, 0, op->capacity, nullptr, len - op->capacity,
			hdr.cq_data, hdr.tag);
	else
		complete_rx(op->op_flags, op->context, flags, len,
			    op->iov_count ? op->iov[0].iov_base : nullptr, hdr.cq_data, hdr.tag,
			    source);
	free_recv(op);
	return true;
}

// A message no posted receive took yet, before its data: unlinked, uncharged.
Unexpected *RxmEndpoint::new_unexpected(RxmConn *conn, const WireHeader &hdr)
{
	Unexpected *u = new Unexpected{};
	u->match.owner = u;
	u->match.source = known_source(conn);
	u->match.tag = hdr.tag;
	u->protocol = hdr.op;
	u->conn = conn;
	u->cq_data = hdr.cq_data;
	u->wire_flags = hdr.flags;
	u->total_len = hdr.total_len;
	u->msg_id = hdr.msg_id;
	u->complete = hdr.op == WireOp::eager;
	return u;
}

void RxmEndpoint::queue_unexpected(Unexpected *u, size_t charge)
{
	matcher_.add_unexpected(kind_of(u->wire_flags & wire_flag::tagged), &u->match);
	charge_unexpected(u, charge);
}

void RxmEndpoint::buffer_eager(RxmConn *conn, const WireHeader &hdr,
			       std::span<const uint8_t> payload)
{
	Unexpected *u = new_unexpected(conn, hdr);
	u->data.assign(payload.begin(), payload.end());
	queue_unexpected(u, sizeof(Unexpected) + u->data.capacity());
}

void RxmEndpoint::handle_first(RxmConn *conn, const WireHeader &hdr,
			       std::span<const uint8_t> payload)
{
	if (hdr.op == WireOp::eager) {
		if (!deliver_eager(conn, hdr, payload))
			buffer_eager(conn, hdr, payload);
		return;
	}
	// A rendezvous request.
	bool tagged = hdr.flags & wire_flag::tagged;
	MatchKind kind = kind_of(tagged);
	RndvSegment segs[kRndvMaxSegments];
	size_t nsegs = 0;
	CmaOffer offer;
	// decode_message checked that a flagged request holds the offer after its segments.
	bool offered = hdr.flags & wire_flag::cma;
	std::span<const uint8_t> seg_bytes =
		offered ? payload.first(payload.size() - kCmaOfferSize) : payload;
	if (decode_rndv(seg_bytes, hdr.total_len, segs, &nsegs) ||
	    (offered && !check_cma_offer(conn, payload.last(kCmaOfferSize), &offer))) {
		RXM_WARN(FI_LOG_EP_DATA, "malformed rendezvous request\n");
		fail_conn(conn, -FI_EIO);
		return;
	}
	PostedRecv *posted = matcher_.find_posted(kind, source_of(conn), hdr.tag);
	RecvOp *receiver = posted ? claim_receiver(static_cast<RecvOp *>(posted->owner),
						   hdr.total_len)
				  : nullptr;
	if (receiver) {
		start_message(receiver, conn, hdr);
		memcpy(receiver->rndv, segs, sizeof(segs));
		receiver->rndv_count = nsegs;
		start_rndv(receiver, offer.addr);
		return;
	}
	Unexpected *u = new_unexpected(conn, hdr);
	memcpy(u->rndv, segs, sizeof(segs));
	u->rndv_count = nsegs;
	memcpy(u->cma_addr, offer.addr, sizeof(offer.addr));
	queue_unexpected(u, sizeof(Unexpected) + u->data.capacity());
}

void RxmEndpoint::handle_sar_segment(RxmConn *conn, const WireHeader &hdr,
				     std::span<const uint8_t> payload)
{
	if (!conn->sar.active()) {
		if (hdr.offset != 0) {
			fail_conn(conn, -FI_EIO);
			return;
		}
		conn->sar.begin(hdr);
		conn->sar_target = nullptr;
		conn->sar_unexpected = nullptr;
		bool tagged = hdr.flags & wire_flag::tagged;
		MatchKind kind = kind_of(tagged);
		PostedRecv *posted = matcher_.find_posted(kind, source_of(conn), hdr.tag);
		RecvOp *receiver = posted ? claim_receiver(static_cast<RecvOp *>(posted->owner),
							   hdr.total_len)
					  : nullptr;
		if (receiver) {
			start_message(receiver, conn, hdr);
			conn->sar_target = receiver;
		} else {
			Unexpected *u = new_unexpected(conn, hdr);
			conn->sar_unexpected = u;
			queue_unexpected(u, sizeof(Unexpected));
		}
	}
	auto result = conn->sar.accept(hdr, payload, [&](uint64_t offset, std::span<const uint8_t> b) {
		if (conn->sar_target)
			place(conn->sar_target, offset, b);
		else if (Unexpected *u = conn->sar_unexpected) {
			size_t before = u->data.capacity();
			u->data.insert(u->data.end(), b.begin(), b.end());
			charge_unexpected(u, u->data.capacity() - before);
		}
		// else: the unexpected message was discarded; drop its bytes.
	});
	if (result == SarReassembly::Result::protocol_error) {
		RXM_WARN(FI_LOG_EP_DATA, "out of order SAR segment\n");
		fail_conn(conn, -FI_EIO);
		return;
	}
	if (result == SarReassembly::Result::complete) {
		if (conn->sar_target)
			complete_recv(conn->sar_target);
		if (conn->sar_unexpected)
			conn->sar_unexpected->complete = true;
		conn->sar_target = nullptr;
		conn->sar_unexpected = nullptr;
	}
}

TxOp *RxmEndpoint::awaiting_op(RxmConn *conn, uint64_t msg_id, TxKind kind)
{
	// msg_id comes from the peer: only an op of ours that waits for exactly this answer
	// on this connection qualifies.
	uint32_t index = static_cast<uint32_t>(msg_id);
	uint32_t generation = static_cast<uint32_t>(msg_id >> 32);
	if (index >= ops_.size())
		return nullptr;
	TxOp *op = &ops_[index];
	// The answer may overtake the local completion of our own send (outstanding > 0): the
	// op then finishes when that completion arrives.
	if (!op->in_use || op->generation != generation || op->conn != conn || !op->linked())
		return nullptr;
	if (op->kind != kind && !(kind == TxKind::eager && op->kind == TxKind::sar))
		return nullptr;
	if (op->kind != TxKind::rndv && op->kind != TxKind::atomic &&
	    !(op->hdr.flags & wire_flag::delivery_complete))
		return nullptr;
	return op;
}

void RxmEndpoint::handle_rndv_done(RxmConn *conn, const WireHeader &hdr)
{
	if (hdr.flags & wire_flag::rndv_write) {
		// The sender finished writing into one of our receives.
		auto &targets = conn->write_targets;
		for (auto it = targets.begin(); it != targets.end(); ++it) {
			if ((*it)->msg_id == hdr.msg_id) {
				RecvOp *op = *it;
				targets.erase(it);
				complete_recv(op);
				return;
			}
		}
		RXM_WARN(FI_LOG_EP_DATA, "unexpected rndv_done (write) ignored\n");
		return;
	}
	TxOp *op = awaiting_op(conn, hdr.msg_id, TxKind::rndv);
	if (!op || op->writing) {
		RXM_WARN(FI_LOG_EP_DATA, "unexpected rndv_done ignored\n");
		return;
	}
	IntrusiveList<TxOp>::remove(op);
	note_rndv_done(conn, op, hdr.flags);
	maybe_finish(op);
}

void RxmEndpoint::start_rndv_reads(RecvOp *op, const uint64_t *cma_addr)
{
	if (pull_by_cma(op, cma_addr))
		return;
	// Local descriptors: the application's registrations, else our own when the core needs them.
	for (size_t i = 0; i < op->iov_count; i++) {
		RxmMr *mr = op->desc[i] ? RxmMr::from_desc(op->desc[i]) : nullptr;
		if (mr) {
			op->desc[i] = mr->core_desc();
		} else if (domain_->core_needs_local_mr() && op->iov[i].iov_len) {
			struct fid_mr *own = nullptr;
			int ret = domain_->register_internal(op->iov[i].iov_base, op->iov[i].iov_len,
							     FI_READ, &own);
			if (ret) {
				op->error = ret;
				break;
			}
			op->own_mr[op->own_mr_count++] = own;
			op->desc[i] = fi_mr_desc(own);
		} else {
			op->desc[i] = nullptr;
		}
	}
	op->rndv_issued = 0;
	op->reads_outstanding = 0;
	pending_reads_.push_back(op);
	post_pending_reads();
}

void RxmEndpoint::post_pending_reads()
{
	while (!pending_reads_.empty()) {
		RecvOp *op = pending_reads_.front();
		uint64_t to_read = std::min<uint64_t>(op->total_len, op->capacity);
		if (op->conn->state == ConnState::closed && !op->error)
			op->error = -FI_ECONNRESET;
		if (op->error || op->rndv_issued >= to_read) {
			pending_reads_.pop_front();
			// Read in full over the core: the done also kills the key, when the
			// sender said it may (rxm_wire.h).
			bool invalidate = !op->error && op->rndv_count == 1 &&
					  (op->wire_flags & wire_flag::rndv_invalidate) &&
					  !(op->wire_flags & kArrivedOnShm);
			if (op->conn->state != ConnState::closed)
				send_control(op->conn, WireOp::rndv_done, op->msg_id, 0,
					     invalidate ? &op->rndv[0].key : nullptr);
			complete_recv(op);
			continue;
		}
		if (op->conn->state != ConnState::connected)
			return; // reads wait for the connection to come up
		// Next chunk: where rndv_issued falls in the local iov and in the remote segments.
		uint64_t pos = op->rndv_issued;
		size_t li = 0;
		uint64_t loff = pos;
		while (li < op->iov_count && loff >= op->iov[li].iov_len)
			loff -= op->iov[li++].iov_len;
		size_t ri = 0;
		uint64_t roff = pos;
		while (ri < op->rndv_count && roff >= op->rndv[ri].len)
			roff -= op->rndv[ri++].len;
		if (li >= op->iov_count || ri >= op->rndv_count) {
			op->error = -FI_EIO;
			continue;
		}
		uint64_t chunk = std::min(op->iov[li].iov_len - loff, op->rndv[ri].len - roff);
		chunk = std::min(chunk, to_read - pos);
		size_t core_max = domain_->core_info()->ep_attr->max_msg_size;
		if (core_max && chunk > core_max)
			chunk = core_max;
		bool on_shm = op->wire_flags & kArrivedOnShm;
		ssize_t ret = fi_read(rndv_ep(op->conn, on_shm),
				      static_cast<uint8_t *>(op->iov[li].iov_base) + loff, chunk,
				      rndv_desc(op->desc[li], on_shm), 0, op->rndv[ri].addr + roff,
				      op->rndv[ri].key, &op->core);
		if (ret == -FI_EAGAIN)
			return;
		pending_reads_.pop_front();
		if (ret) {
			op->error = static_cast<int>(ret);
			pending_reads_.push_front(op); // finished (with the error) on the next pass
			continue;
		}
		op->rndv_issued += chunk;
		op->reads_outstanding = 1;
		op->conn->reads_in_core++;
		maybe_release_peer(op->conn); // the answer comes on its stream
		if (int timeout = params().rndv_read_timeout_s) {
			op->read_deadline = std::chrono::steady_clock::now() +
					    std::chrono::seconds(timeout);
			if (rndv_read_next_ == std::chrono::steady_clock::time_point{} ||
			    op->read_deadline < rndv_read_next_)
				rndv_read_next_ = op->read_deadline;
		}
	}
}

// A peer that never serves our read (stalled, or hostile) would hold the matched receive
// forever. Its connection is failed instead, and the receive completes with FI_ETIMEDOUT only
// once the core has given the read back: through the flush fi_shutdown writes to the core CQ
// (our tcp), else through finish_core_held once the closed endpoint's completions were read.
// Either way the core no longer writes into the buffer.
void RxmEndpoint::expire_rndv_reads(std::chrono::steady_clock::time_point now)
{
	using Clock = std::chrono::steady_clock;
	if (rndv_read_next_ == Clock::time_point{} || now < rndv_read_next_)
		return;
	Clock::time_point next{};
	for (RecvOp &op : recvs_) {
		if (!op.in_use || !op.reads_outstanding || !op.conn ||
		    op.conn->state == ConnState::closed ||
		    op.read_deadline == Clock::time_point{})
			continue;
		if (now >= op.read_deadline) {
			RXM_WARN(FI_LOG_EP_DATA, "rendezvous read not served by %s within %d s: "
						 "closing the connection\n",
				 describe_address(op.conn->peer_name.view()).c_str(),
				 params().rndv_read_timeout_s);
			// Shut down first: the core then flushes the read into its CQ (in order,
			// before anything it writes later), so the receive completes once that
			// flush is read - never while the core could still write into it.
			fi_shutdown(op.conn->core_ep, 0);
			fail_conn(op.conn, -FI_ETIMEDOUT);
			continue;
		}
		if (next == Clock::time_point{} || op.read_deadline < next)
			next = op.read_deadline;
	}
	rndv_read_next_ = next;
}

void RxmEndpoint::on_rndv_read_done(RecvOp *op, int err)
{
	op->reads_outstanding = 0;
	// A read flushed by a connection we failed reports why we failed it (e.g. FI_ETIMEDOUT).
	if (err && op->conn->state == ConnState::closed && op->conn->close_error)
		err = op->conn->close_error;
	if (op->conn->reads_in_core && --op->conn->reads_in_core == 0 &&
	    op->conn->unexpected_bytes > params().unexpected_budget)
		hold_peer(op->conn);
	if (err && !op->error)
		op->error = err;
	// Back in the queue: either more to read, or finish (rndv_done + completion).
	pending_reads_.push_back(op);
	post_pending_reads();
}

// fi_recv/fi_trecv of one buffer with op flags that ask nothing special (no FI_MULTI_RECV,
// FI_CLAIM): recv_common's steps for it, without its walk over iovs and the claim and
// multi-receive branches (the fi_trecv of a message stream cost ~190 instructions). Inline
// in recv and trecv: the 9-argument call cost more than some of its steps.
[[gnu::always_inline]] inline ssize_t RxmEndpoint::post_one(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
			      uint64_t ignore, void *context, uint64_t flags, bool tagged)
{
	if (len && !buf)
		return -FI_EINVAL;
	if (!(info_->caps & FI_DIRECTED_RECV))
		src = FI_ADDR_UNSPEC;
	// Without a real lock (FI_THREAD_DOMAIN/COMPLETION) the post has no call to make and
	// saves no registers.
	if (!lock_.is_real())
		return post_one_locked(buf, len, desc, src, tag, ignore, context, flags, tagged);
	std::lock_guard guard(lock_);
	return post_one_locked(buf, len, desc, src, tag, ignore, context, flags, tagged);
}

// post_one with the endpoint's lock held (or none needed).
[[gnu::always_inline]] inline ssize_t
RxmEndpoint::post_one_locked(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
			     uint64_t ignore, void *context, uint64_t flags, bool tagged)
{
	if (!enabled())
		return -FI_EOPBADSTATE;
	RecvOp *op = alloc_recv();
	if (!op)
		return -FI_EAGAIN;
	op->iov[0] = {buf, len};
	op->desc[0] = desc;
	op->iov_count = 1;
	op->capacity = len;
	set_receive(op, context, flags, tagged, {src, tagged ? tag : 0, tagged ? ignore : ~0ULL});
	MatchKind kind = kind_of(tagged);
	if (!matcher_.unexpected_empty(kind)) [[unlikely]]
		return take_unexpected_or_post(op, kind);
	matcher_.post(kind, &op->match);
	return 0;
}

// post_one with messages waiting: out of line, so that the usual post makes no call and
// saves no registers.
[[gnu::noinline]] ssize_t RxmEndpoint::take_unexpected_or_post(RecvOp *op, MatchKind kind)
{
	// A message that arrived first is taken (the oldest the receive accepts).
	if (UnexpectedMsg *m = matcher_.find_unexpected(kind, op->match.spec)) {
		Matcher::remove_unexpected(m);
		consume_unexpected(op, static_cast<Unexpected *>(m->owner));
		return 0;
	}
	matcher_.post(kind, &op->match);
	return 0;
}

static bool plain_recv_flags(uint64_t flags) { return !(flags & (FI_MULTI_RECV | FI_CLAIM)); }

ssize_t RxmEndpoint::recv(void *buf, size_t len, void *desc, fi_addr_t src, void *context)
{
	uint64_t flags = rx_op_flags();
	if (plain_recv_flags(flags))
		return post_one(buf, len, desc, src, 0, 0, context, flags, false);
	iovec iov{buf, len};
	return recv_common(&iov, &desc, 1, src, 0, 0, context, flags, false);
}

ssize_t RxmEndpoint::recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			   void *context)
{
	return recv_common(iov, desc, count, src, 0, 0, context, rx_op_flags(), false);
}

ssize_t RxmEndpoint::recvmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (!flags_allowed(flags, kRecvMsgFlags))
		return -FI_EBADFLAGS;
	return recv_common(msg->msg_iov, msg->desc, msg->iov_count, msg->addr, 0, 0, msg->context,
			   flags, false);
}

ssize_t RxmEndpoint::trecv(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
			   uint64_t ignore, void *context)
{
	uint64_t flags = rx_op_flags();
	if (plain_recv_flags(flags))
		return post_one(buf, len, desc, src, tag, ignore, context, flags, true);
	iovec iov{buf, len};
	return recv_common(&iov, &desc, 1, src, tag, ignore, context, flags, true);
}

ssize_t RxmEndpoint::trecvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			    uint64_t tag, uint64_t ignore, void *context)
{
	return recv_common(iov, desc, count, src, tag, ignore, context, rx_op_flags(), true);
}

ssize_t RxmEndpoint::trecvmsg(const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (!flags_allowed(flags, kTaggedRecvMsgFlags))
		return -FI_EBADFLAGS;
	if (flags & FI_PEEK)
		return peek(msg, flags);
	return recv_common(msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->tag,
			   msg->ignore, msg->context, flags, true);
}

} // namespace rxm
