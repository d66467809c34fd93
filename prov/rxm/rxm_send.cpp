// Sending: eager (one bounce buffer), SAR (segments copied as the core takes them) and
// rendezvous (the receiver reads the registered source buffers), all queued per connection in
// order so that messages between two endpoints arrive in the order they were sent (FI_ORDER_SAS).
#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_flags.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/rxm/rxm_share.h"
#include "prov/rxm/rxm_shm.h"
#include "prov/shm/shm_send_ops.h"
#include "prov/util/mr_bind_flag.h"

#include <rdma/fi_errno.h>

#include <unistd.h>

#include <cstring>

namespace rxm {

namespace {

// Copies len bytes starting at byte offset 'from' of the iov list into out.
void gather(const struct iovec *iov, size_t count, uint64_t from, uint8_t *out, size_t len)
{
	for (size_t i = 0; i < count && len; i++) {
		if (from >= iov[i].iov_len) {
			from -= iov[i].iov_len;
			continue;
		}
		size_t n = std::min<uint64_t>(iov[i].iov_len - from, len);
		memcpy(out, static_cast<const uint8_t *>(iov[i].iov_base) + from, n);
		out += n;
		len -= n;
		from = 0;
	}
}

// Below this, copying the payload next to the header is cheaper than another iov.
constexpr size_t kZeroCopyMin = 2048;

// Fills out[] with the pieces of [from, from + len) of the iov list; false if more than max.
bool slice_iov(const struct iovec *iov, size_t count, uint64_t from, size_t len, iovec *out,
	       size_t max, size_t *used)
{
	size_t n = 0;
	for (size_t i = 0; i < count && len; i++) {
		if (from >= iov[i].iov_len) {
			from -= iov[i].iov_len;
			continue;
		}
		if (n == max)
			return false;
		size_t take = std::min<uint64_t>(iov[i].iov_len - from, len);
		out[n++] = {static_cast<uint8_t *>(iov[i].iov_base) + from, take};
		len -= take;
		from = 0;
	}
	*used = n;
	return len == 0;
}

uint64_t make_msg_id(const TxOp *op) { return (uint64_t(op->generation) << 32) | op->index; }

// What one fi_inject of the endpoint's info takes (0: none).
size_t inject_size_of(const fi_info *info)
{
	return info && info->tx_attr ? info->tx_attr->inject_size : 0;
}

} // namespace

// Small helpers of the send path, only used in this file: inline (a member function of a
// shared library is otherwise called, never inlined, per message).
// The largest payload an eager message to conn's peer may carry (its receive buffers).
inline size_t RxmEndpoint::eager_size_to(const RxmConn *conn) const
{
	return conn->peer_eager_size ? std::min(conn->peer_eager_size, eager_limit_) : eager_limit_;
}

// A same-host peer that pulls by process_vm_readv (or may: the first such request finds out)
// takes mid-sized messages in one copy instead of two through the core.
inline bool RxmEndpoint::goes_by_cma_rndv(const RxmConn *conn, uint64_t total, uint64_t flags) const
{
	return cma_ && conn->cma_peer_pulls >= 0 &&
	       total > (conn->tx_on_shm ? cma_rndv_min_shm_ : cma_rndv_min_) &&
	       !(flags & FI_INJECT);
}

// tcp can send a burst (sends posted between two progress passes) in one sendmsg at the
// next pass, holding back the sends rxm marks FI_MORE and nothing else (rxm asked that mode:
// prov/util/send_hold_ops.h). rxm may mark only sends whose completion the application will
// read, since that read runs the pass that sends them: an inject, a suppressed completion
// or rxm's own protocol message may be the last call before the application waits on
// something else (an out-of-band barrier at the end of a run), and its peer would wait for
// the held bytes forever. Not over shm, which sends at once anyway, nor while rxm's own
// progress thread runs (the application need not come back then).
inline bool RxmEndpoint::may_hold_for_app(bool report, const RxmConn *conn) const
{
	return report && !conn->tx_on_shm && domain_->core_holds_more() &&
	       !progress_running_.load(std::memory_order_relaxed);
}

// The second and later eager messages of a burst go with FI_MORE and a core completion; the
// first of a burst (a ping-pong's every message) goes at once, injected when it is small.
inline bool RxmEndpoint::send_for_coalescing(bool report, const RxmConn *conn)
{
	bool burst = last_small_send_pass_ == progress_passes_;
	last_small_send_pass_ = progress_passes_;
	return burst && may_hold_for_app(report, conn);
}

// Credit flow control's steps of every send (rxm_flow_ctrl.cpp), inline: over shm and tcp
// (no flow control) they find nothing to do, and a call each cost more than that.
// A data message needs a credit over a core with flow control (verbs).
inline bool RxmEndpoint::take_send_credit(RxmConn *conn)
{
	return conn->send_credits.take_for_data();
}

// The credits a message about to be posted on conn's core carries back. Over shm the message
// bypasses the core's receive buffers (and the path that reads this field): the credits
// wait for the next core message or update.
inline uint16_t RxmEndpoint::credits_to_piggyback(const RxmConn *conn) const
{
	return conn->tx_on_shm ? 0 : conn->credit_return.to_piggyback();
}

void RxmEndpoint::open_core_send_ops()
{
	// Our shm and tcp answer this name; any other core sends by fi_inject.
	void *ops = nullptr;
	core_send_ops_ = fi_open_ops(&domain_->core()->fid, OFI_FRAMED_SEND_OPS_NAME, 0, &ops,
				     nullptr) == 0
				 ? static_cast<const ofi_framed_send_ops *>(ops)
				 : nullptr;
}

TxOp *RxmEndpoint::alloc_op(RxmConn *for_peer)
{
	size_t reserve = for_peer ? kControlReserve : 0;
	if (free_ops_.size() <= reserve ||
	    (for_peer && !within_peer_share(for_peer->ops_held, free_ops_.size(), reserve)))
		return nullptr;
	uint32_t index = free_ops_.back();
	free_ops_.pop_back();
	TxOp *op = &ops_[index];
	op->reset(index, op->generation + 1);
	if (for_peer) {
		op->charged = for_peer;
		for_peer->ops_held++;
	}
	return op;
}

void RxmEndpoint::free_op(TxOp *op)
{
	if (op->own_mr_count) // (a send rarely registers: no call per message for none)
		close_own_mrs(op->own_mr, op->own_shm_mr, &op->own_mr_count);
	if (op->prepared) {
		free_tx_buffer(op->prepared);
		op->prepared = nullptr;
	}
	if (op->charged) {
		op->charged->ops_held--;
		op->charged = nullptr;
	}
	op->in_use = false;
	free_ops_.push_back(op->index);
}

TxBuffer *RxmEndpoint::alloc_tx_buffer(RxmConn *for_peer)
{
	size_t reserve = for_peer ? kControlBufferReserve : 0;
	if (free_tx_count_ <= reserve ||
	    (for_peer && !within_peer_share(for_peer->tx_buffers_held, free_tx_count_, reserve)))
		return nullptr;
	TxBuffer *b = free_tx_;
	if (b) {
		free_tx_count_--;
		free_tx_ = b->next_free;
		b->op = nullptr;
		b->conn = nullptr;
		b->len = 0;
		b->charged = for_peer;
		if (for_peer)
			for_peer->tx_buffers_held++;
	}
	return b;
}

void RxmEndpoint::free_tx_buffer(TxBuffer *buf)
{
	buf->conn = nullptr; // a free buffer refers to no connection (see conn_referenced)
	if (buf->charged) {
		buf->charged->tx_buffers_held--;
		buf->charged = nullptr;
	}
	buf->next_free = free_tx_;
	free_tx_ = buf;
	free_tx_count_++;
}

int RxmEndpoint::translate_desc(const struct iovec *iov, void **app_desc, size_t count,
				uint64_t access, TxOp *op)
{
	for (size_t i = 0; i < count; i++) {
		if (app_desc && app_desc[i]) {
			RxmMr *mr = RxmMr::from_desc(app_desc[i]);
			if (!mr)
				return -FI_EINVAL;
			// A read-based rendezvous hands the peer this key: the application's
			// registration serves only if it grants remote reads, else ours (below) does.
			bool peer_reads = op->kind == TxKind::rndv &&
					  !(op->hdr.flags & wire_flag::rndv_write);
			if (!peer_reads || mr->grants(FI_REMOTE_READ)) {
				op->desc[i] = mr->core_desc();
				op->rndv_key[i] = fi_mr_key(mr->core());
				continue;
			}
		}
		bool need_key = op->kind == TxKind::rndv;
		if (!need_key && !domain_->core_needs_local_mr()) {
			op->desc[i] = nullptr;
			continue;
		}
		struct fid_mr *mr = nullptr;
		int ret = domain_->register_internal(iov[i].iov_base, iov[i].iov_len, access, &mr);
		if (ret)
			return ret;
		op->own_mr[op->own_mr_count++] = mr;
		op->desc[i] = fi_mr_desc(mr);
		op->rndv_key[i] = fi_mr_key(mr);
	}
	return 0;
}

ssize_t RxmEndpoint::send_common(const struct iovec *iov, void **desc, size_t count,
				 fi_addr_t dest, void *context, uint64_t data, uint64_t tag,
				 uint64_t flags, bool tagged)
{
	if (count > kRndvMaxSegments || (count && !iov))
		return -FI_EINVAL;
	uint64_t total = 0;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
		total += iov[i].iov_len;
	}
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_EOPBADSTATE;
	if ((flags & FI_INJECT) && total > inject_limit_)
		return -FI_EMSGSIZE;
	check_shm_before_send(); // a shm peer's death after idle passes (progress())
	// conn_for_send's first step, inline: the route remembered for dest, if still valid.
	RxmConn *conn = nullptr;
	RxmAv *table = av();
	if (table && dest < send_routes_.size()) {
		const SendRoute &route = send_routes_[dest];
		if (route.epoch == routes_epoch_ && route.av_generation == table->generation())
			conn = route.conn;
	}
	if (!conn) {
		int err = 0;
		conn = conn_for_send(dest, &err);
		if (!conn)
			return err;
	}
	if (send_eager_at_once(conn, iov, count, total, context, data, tag, flags, tagged))
		return 0;
	return send_queued(conn, iov, desc, count, total, context, data, tag, flags, tagged);
}

ssize_t RxmEndpoint::send_queued(RxmConn *conn, const struct iovec *iov, void **desc,
				 size_t count, uint64_t total, void *context, uint64_t data,
				 uint64_t tag, uint64_t flags, bool tagged)
{
	TxOp *op = alloc_op(conn);
	if (!op)
		return -FI_EAGAIN;
	op->context = context;
	op->cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	op->report = tx_entry_wanted(flags) && !(flags & kNoCompletionFlag);
	op->conn = conn;
	op->total_len = total;
	op->hdr.flags = tagged ? wire_flag::tagged : 0;
	if (flags & FI_REMOTE_CQ_DATA)
		op->hdr.flags |= wire_flag::remote_cq_data;
	op->hdr.tag = tagged ? tag : 0;
	op->hdr.cq_data = data;
	op->hdr.msg_id = make_msg_id(op);
	op->hdr.total_len = total;
	if (flags & FI_DELIVERY_COMPLETE)
		op->hdr.flags |= wire_flag::delivery_complete; // rendezvous is that by design

	size_t eager = eager_size_to(conn);
	bool cma_rndv = goes_by_cma_rndv(conn, total, flags);
	if (total <= eager && !cma_rndv) {
		// Eager: copy now, so the application's buffer is free at once (inject) and the
		// message can wait for its connection; larger non-inject payloads are sent from
		// the application's buffers, which it keeps until the completion anyway.
		TxBuffer *buf = alloc_tx_buffer(conn);
		if (!buf) {
			free_op(op);
			return -FI_EAGAIN;
		}
		op->kind = TxKind::eager;
		WireHeader h = op->hdr;
		h.op = WireOp::eager;
		h.payload_len = static_cast<uint32_t>(total);
		encode_header(h, buf->data);
		op->zero_copy = zero_copy_ && !(flags & FI_INJECT) && total >= kZeroCopyMin &&
				count < core_iov_limit_;
		if (op->zero_copy) {
			for (size_t i = 0; i < count; i++)
				op->iov[i] = iov[i];
			op->iov_count = count;
			buf->len = kWireHeaderSize;
		} else {
			if (count == 1 && total) // (a NULL base is allowed for 0 bytes)
				memcpy(buf->data + kWireHeaderSize, iov[0].iov_base, total);
			else
				gather(iov, count, 0, buf->data + kWireHeaderSize, total);
			buf->len = kWireHeaderSize + total;
		}
		buf->op = op;
		op->prepared = buf;
		// A completion at FI_TRANSMIT_COMPLETE or later waits for the core's own.
		op->core_inject = !op->zero_copy &&
				  !(flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE));
	} else if (total <= sar_limit_ && !cma_rndv && !(stream_rndv_ && conn->ops_held > 1)) {
		// (ops_held counts this op: more means others to this peer are in flight.)
		op->kind = TxKind::sar;
		for (size_t i = 0; i < count; i++)
			op->iov[i] = iov[i];
		op->iov_count = count;
	} else {
		op->kind = TxKind::rndv;
		op->hdr.flags &= ~wire_flag::delivery_complete; // rndv_done already means delivered
		if (params().use_rndv_write)
			op->hdr.flags |= wire_flag::rndv_write;
		for (size_t i = 0; i < count; i++)
			op->iov[i] = iov[i];
		op->iov_count = count;
		// The peer reads the buffers (read rendezvous), or we write from them: nothing more.
		// A peer that pulls our offers needs no keys (rxm_cma.h: keyless offers).
		bool keyless = cma_keyless(conn);
		uint64_t access = params().use_rndv_write ? FI_WRITE : FI_REMOTE_READ;
		int ret = keyless ? 0 : translate_desc(iov, desc, count, access, op);
		TxBuffer *buf = ret ? nullptr : alloc_tx_buffer(conn);
		if (!buf) {
			free_op(op);
			return ret ? ret : -FI_EAGAIN;
		}
		RndvSegment segs[kRndvMaxSegments];
		size_t nsegs = 0;
		for (size_t i = 0; i < count; i++) {
			if (!iov[i].iov_len)
				continue;
			uint64_t addr = domain_->core_uses_virt_addr()
						? reinterpret_cast<uintptr_t>(iov[i].iov_base)
						: 0;
			segs[nsegs++] = {addr, iov[i].iov_len, keyless ? 0 : op->rndv_key[i]};
		}
		WireHeader h = op->hdr;
		h.op = WireOp::rndv_request;
		h.payload_len = static_cast<uint32_t>(rndv_payload_size(nsegs));
		encode_rndv({segs, nsegs}, buf->data + kWireHeaderSize);
		if (cma_ && conn->cma_peer_pulls >= 0) {
			CmaOffer offer;
			// Never cached past a fork: a child must not offer its parent's memory.
			offer.pid = cma_self_pid();
			offer.token_addr = reinterpret_cast<uintptr_t>(cma_token_);
			memcpy(offer.token, cma_token_, kCmaTokenSize);
			for (size_t i = 0, n = 0; i < count; i++)
				if (iov[i].iov_len)
					offer.addr[n++] = reinterpret_cast<uintptr_t>(iov[i].iov_base);
			encode_cma_offer(offer, buf->data + kWireHeaderSize + h.payload_len);
			h.payload_len += kCmaOfferSize;
			h.flags |= wire_flag::cma;
			op->hdr.flags |= wire_flag::cma; // rndv_done tells whether the peer pulled
			if (keyless) {
				h.flags |= wire_flag::cma_only;
				op->hdr.flags |= wire_flag::cma_only;
			}
		}
		encode_header(h, buf->data);
		buf->len = kWireHeaderSize + h.payload_len;
		buf->op = op;
		op->prepared = buf;
	}
	queue_op(conn, op);
	return 0;
}

// The common small send (a ping-pong's every message, a stream's first of each pass): an
// eager message to a connected peer with nothing queued before it, that the core injects.
// What the queued path would do for it (an op, a bounce buffer, the queue, pump_one's
// inject, finish_op) is done here in one step: header and payload are gathered on the
// stack, the core copies them within fi_inject and the send completes at once. Over our
// shm, shm writes header and payload straight into its ring (prov/shm/shm_send_ops.h), an
// eager message of any size (8-16 KiB injects too): no stack copy, no bounce buffer, no
// core completion to read back. Anything else (no room in the core, a burst tcp may
// coalesce, a completion that waits for the peer) returns false before any state changed,
// and takes the queued path.
// Inlined into send_common, its only caller: a call and a nine-argument prologue less per
// message.
[[gnu::always_inline]] inline bool
RxmEndpoint::send_eager_at_once(RxmConn *conn, const struct iovec *iov, size_t count,
				uint64_t total, void *context, uint64_t data, uint64_t tag,
				uint64_t flags, bool tagged)
{
	constexpr size_t kMaxPayload = 1024; // bounds the stack copy
	const ofi_framed_send_ops *framed = conn->tx_on_shm ? shm_->send_ops : core_send_ops_;
	if ((total > kMaxPayload && !framed) || conn->state != ConnState::connected ||
	    !conn->backlog.empty() || (flags & (FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE)))
		return false;
	size_t len = kWireHeaderSize + total;
	// Over our shm, shm itself answers whether the message fits the ring (-FI_EAGAIN).
	if (total > eager_size_to(conn) || goes_by_cma_rndv(conn, total, flags) ||
	    (!framed &&
	     len > inject_size_of(conn->tx_on_shm ? shm_->info : domain_->core_info())))
		return false;
	bool report = tx_entry_wanted(flags) && !(flags & kNoCompletionFlag);
	// The burst rule of send_for_coalescing; a send it would hold goes queued (which
	// finds the same burst: last_small_send_pass_ is already this pass).
	uint64_t last_pass = last_small_send_pass_;
	if (send_for_coalescing(report, conn))
		return false;
	// msg_id 0: nothing answers an eager message sent without FI_DELIVERY_COMPLETE.
	uint16_t wire_flags = (tagged ? wire_flag::tagged : 0) |
			      ((flags & FI_REMOTE_CQ_DATA) ? wire_flag::remote_cq_data : 0);
	uint16_t credits = credits_to_piggyback(conn);
	uint8_t wire[kWireHeaderSize + kMaxPayload];
	encode_eager_header(wire, wire_flags, tagged ? tag : 0, data, static_cast<uint32_t>(total),
			    conn->peer_conn_id, credits);
	// Over a core with credit flow control (verbs) it needs a credit like a queued send.
	bool sent = take_send_credit(conn);
	if (sent) {
		ssize_t ret;
		if (framed) {
			// Header and payload go straight into shm's ring slot: no copy here first.
			ret = framed->inject_framed(tx_ep(conn), wire, kWireHeaderSize, iov, count,
						    total);
		} else {
			if (count == 1 && total) // (a NULL base is allowed for 0 bytes)
				memcpy(wire + kWireHeaderSize, iov[0].iov_base, total);
			else
				gather(iov, count, 0, wire + kWireHeaderSize, total);
			ret = fi_inject(tx_ep(conn), wire, len, 0);
		}
		if (ret != 0) {
			return_send_credit(conn);
			sent = false;
		}
	}
	if (!sent) {
		// The queued path retries it (and reports what fails) as this pass's first.
		last_small_send_pass_ = last_pass;
		return false;
	}
	conn->credit_return.piggybacked(credits);
	uint64_t cq_flags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
	if (report)
		complete_tx(FI_COMPLETION, context, cq_flags);
	else
		count_tx(cq_flags);
	return true;
}

void RxmEndpoint::queue_op(RxmConn *conn, TxOp *op)
{
	conn->backlog.push_back(op);
	if (conn->state == ConnState::connected)
		pump(conn);
}

void RxmEndpoint::pump(RxmConn *conn)
{
	while (conn->state == ConnState::connected) {
		TxOp *op = conn->backlog.front();
		if (!op || !pump_one(conn, op))
			break;
	}
	// Stalled: progress retries it (every connection reaching connected is pumped by
	// on_connected, so a queue that waits for its connection needs no listing).
	if (conn->state == ConnState::connected && !conn->backlog.empty() &&
	    !conn->backlog_listed())
		backlogged_.push_back(conn);
}

void RxmEndpoint::pump_backlogged()
{
	// pump never unlinks, so the saved next stays valid; a connection listed meanwhile is
	// appended and visited too.
	backlogged_.for_each([this](RxmConn &conn) {
		if (conn.state == ConnState::connected && !conn.backlog.empty())
			pump(&conn);
		if (conn.state != ConnState::connected || conn.backlog.empty())
			IntrusiveList<RxmConn>::remove(&conn);
	});
}

// A prepared message (a rendezvous request, a queued eager or control message) injected. Over
// shm its framed send writes it straight into the ring slot: shm's fi_inject takes it as
// a plain send first (iov checks, its queue; ~160 instructions more). What that cannot
// take at once (-FI_EAGAIN: a full ring, shm's own queue) goes by fi_inject as before.
inline bool RxmEndpoint::inject_prepared(RxmConn *conn, TxBuffer *buf)
{
	if (conn->tx_on_shm && shm_->send_ops) {
		ssize_t ret = shm_->send_ops->inject_framed(tx_ep(conn), buf->data, buf->len,
							    nullptr, 0, 0);
		if (ret != -FI_EAGAIN)
			return ret == 0;
	}
	return fi_inject(tx_ep(conn), buf->data, buf->len, 0) == 0;
}

// Hands (the rest of) op to the core. Returns false when the core or rxm ran out of room;
// the op stays at the front of the queue and is retried from progress.
bool RxmEndpoint::pump_one(RxmConn *conn, TxOp *op)
{
	void *tx_desc = tx_mr_ && !conn->tx_on_shm ? fi_mr_desc(tx_mr_) : nullptr;
	switch (op->kind) {
	case TxKind::control:
		if (!op->prepared) {
			TxBuffer *buf = alloc_tx_buffer();
			if (!buf)
				return false;
			encode_header(op->hdr, buf->data);
			buf->len = kWireHeaderSize;
			buf->op = op;
			op->prepared = buf;
		}
		[[fallthrough]];
	case TxKind::eager:
	case TxKind::rndv:
	case TxKind::atomic: {
		TxBuffer *buf = op->prepared;
		if (!take_send_credit(conn))
			return false;
		if (op->kind == TxKind::rndv && !op->own_mr_bound) {
			// The keys go out now, to this connection's peer only: bind the buffers
			// registered for them to it (the request may have waited for the connection,
			// or moved to another one, since they were registered).
			if (!bind_rndv_sources(op, conn)) {
				return_send_credit(conn);
				return false;
			}
			op->own_mr_bound = true;
			if (op->key_invalidatable)
				stamp_flags(buf->data, wire_flag::rndv_invalidate);
		}
		stamp_conn_id(buf->data, conn->peer_conn_id);
		uint16_t credits = credits_to_piggyback(conn);
		stamp_credits(buf->data, credits);
		// A small message the core injects is copied out of the bounce buffer within the
		// call: no core completion to wait for and read back (a lock, a CQ entry and a
		// pass each; over verbs also a wake-up for the peer's acknowledgement). A
		// rendezvous request too: its op waits for rndv_done, not for the core.
		bool injected = false;
		ssize_t ret;
		bool more = send_for_coalescing(op->report, conn);
		if (op->zero_copy) {
			ret = send_direct(conn, buf, op->iov, op->iov_count, 0, op->total_len, more);
		} else {
			if (!more &&
			    (op->core_inject || op->kind == TxKind::control ||
			     op->kind == TxKind::rndv) &&
			    buf->len <= inject_size_of(conn->tx_on_shm ? shm_->info
								    : domain_->core_info()))
				injected = op->kind == TxKind::control && op->key_invalidatable &&
						   !conn->tx_on_shm
						   ? inject_invalidating(conn, buf, op->peer_key)
						   : inject_prepared(conn, buf);
			ret = injected ? 0 : send_buffer(conn, buf, tx_desc, more);
		}
		if (ret == -FI_EAGAIN) {
			return_send_credit(conn);
			return false;
		}
		IntrusiveList<TxOp>::remove(op);
		if (ret) {
			fail_op(op, static_cast<int>(ret));
			return true;
		}
		conn->credit_return.piggybacked(credits);
		op->prepared = nullptr;
		if (injected) {
			free_tx_buffer(buf);
		} else {
			buf->conn = conn;
			op->outstanding++;
		}
		if (op->hdr.op == WireOp::shm_moved) {
			conn->tx_on_shm = true; // the marker ends this direction on the core
			quiet_core_if_moved(conn);
		}
		if (op->kind == TxKind::rndv || op->kind == TxKind::atomic ||
		    (op->hdr.flags & wire_flag::delivery_complete))
			conn->awaiting.push_back(op); // completes on the receiver's answer
		else if (injected)
			maybe_finish(op);
		return true;
	}
	case TxKind::sar:
		while (op->queued_len < op->total_len) {
			if (!take_send_credit(conn))
				return false;
			TxBuffer *buf = alloc_tx_buffer(conn);
			if (!buf) {
				return_send_credit(conn);
				return false;
			}
			uint64_t n = std::min<uint64_t>(eager_size_to(conn),
							op->total_len - op->queued_len);
			WireHeader h = op->hdr;
			h.op = WireOp::sar_segment;
			h.conn_id = conn->peer_conn_id;
			h.offset = op->queued_len;
			h.payload_len = static_cast<uint32_t>(n);
			if (op->queued_len + n == op->total_len)
				h.flags |= wire_flag::last_segment;
			encode_header(h, buf->data);
			buf->op = op;
			// The first segment may start a burst's hold; the rest of a message whose
			// completion the application will read may wait for that read's pass.
			bool more = op->queued_len == 0 ? send_for_coalescing(op->report, conn)
							: may_hold_for_app(op->report, conn);
			// Segments go from the application's buffers when the core can take them.
			ssize_t ret = zero_copy_ ? send_direct(conn, buf, op->iov, op->iov_count,
							       op->queued_len, n, more)
						 : -FI_E2BIG;
			if (ret == -FI_E2BIG) {
				gather(op->iov, op->iov_count, op->queued_len,
				       buf->data + kWireHeaderSize, n);
				buf->len = kWireHeaderSize + n;
				ret = send_buffer(conn, buf, tx_desc, more);
			}
			if (ret == -FI_EAGAIN) {
				free_tx_buffer(buf);
				return_send_credit(conn);
				return false;
			}
			if (ret) {
				free_tx_buffer(buf);
				IntrusiveList<TxOp>::remove(op);
				fail_op(op, static_cast<int>(ret));
				return true;
			}
			buf->conn = conn;
			op->queued_len += n;
			op->outstanding++;
		}
		IntrusiveList<TxOp>::remove(op);
		if (op->hdr.flags & wire_flag::delivery_complete)
			conn->awaiting.push_back(op);
		else
			maybe_finish(op);
		return true;
	case TxKind::rma_write:
	case TxKind::rma_read: {
		fi_rma_iov rma{op->rma_addr, op->total_len, op->rma_key};
		fi_msg_rma msg{};
		msg.msg_iov = op->iov;
		msg.desc = conn->tx_on_shm ? nullptr : op->desc; // shm takes no local descriptors
		msg.iov_count = op->iov_count;
		msg.rma_iov = &rma;
		msg.rma_iov_count = 1;
		msg.context = &op->core;
		uint64_t core_flags = FI_COMPLETION;
		// A write with remote CQ data consumes a peer receive (verbs): it needs a credit.
		bool needs_credit = op->hdr.flags & wire_flag::remote_cq_data;
		if (needs_credit) { // set by rma_common for writedata
			core_flags |= FI_REMOTE_CQ_DATA;
			msg.data = op->hdr.cq_data;
			if (!take_send_credit(conn))
				return false;
		}
		ssize_t ret = op->kind == TxKind::rma_write
				      ? fi_writemsg(tx_ep(conn), &msg, core_flags)
				      : fi_readmsg(tx_ep(conn), &msg, core_flags);
		if (ret == -FI_EAGAIN) {
			if (needs_credit)
				return_send_credit(conn);
			return false;
		}
		IntrusiveList<TxOp>::remove(op);
		if (ret) {
			fail_op(op, static_cast<int>(ret));
			return true;
		}
		op->outstanding++;
		return true;
	}
	}
	return true;
}

void RxmEndpoint::on_tx_buffer_done(TxBuffer *buf, int err)
{
	TxOp *op = buf->op;
	buf->conn = nullptr;
	free_tx_buffer(buf);
	if (!op)
		return;
	op->outstanding--;
	if (err && !op->error)
		op->error = err;
	if (err && op->linked())
		IntrusiveList<TxOp>::remove(op); // a failed rendezvous request gets no rndv_done
	maybe_finish(op);
}

void RxmEndpoint::on_rma_done(TxOp *op, int err)
{
	op->outstanding--;
	if (err && !op->error)
		op->error = err;
	if (op->kind == TxKind::rndv && op->writing) {
		pending_writes_.push_back(op); // next chunk, or rndv_done when all is written
		post_pending_writes();
		return;
	}
	maybe_finish(op);
}

void RxmEndpoint::maybe_finish(TxOp *op)
{
	// Still queued (SAR segments left, rendezvous waiting for rndv_done) or still in the core.
	if (op->linked() || op->outstanding)
		return;
	finish_op(op);
}

void RxmEndpoint::finish_op(TxOp *op)
{
	// Internal messages (rendezvous done, acks, atomic responses) are not the application's.
	// op->report already applied the selective-completion rule (and inject's "no entry")
	// when the operation was posted, hence FI_COMPLETION here.
	if (op->kind == TxKind::control) {
		if (op->hdr.op == WireOp::collective) // its group reports once its messages left
			coll_sent(op->hdr.tag, op->hdr.msg_id, op->error);
	} else if (op->error)
		fail_tx(op->context, op->cq_flags, op->error, op->error);
	else if (op->report)
		complete_tx(FI_COMPLETION, op->context, op->cq_flags);
	else
		count_tx(op->cq_flags);
	free_op(op);
}

void RxmEndpoint::fail_op(TxOp *op, int err)
{
	if (!op->error)
		op->error = err;
	if (op->linked())
		IntrusiveList<TxOp>::remove(op);
	maybe_finish(op);
}

// FI_MORE lets a core that coalesces (tcp) hold the send for its next pass; rxm asked it
// to hold nothing else (prov/util/send_hold_ops.h).
static ssize_t send_core(struct fid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			 void *context, bool more)
{
	if (!more)
		return fi_sendv(ep, iov, desc, count, 0, context);
	struct fi_msg msg = {};
	msg.msg_iov = iov;
	msg.desc = desc;
	msg.iov_count = count;
	msg.context = context;
	return fi_sendmsg(ep, &msg, FI_MORE | FI_COMPLETION);
}

ssize_t RxmEndpoint::send_buffer(RxmConn *conn, TxBuffer *buf, void *desc, bool more)
{
	if (!more)
		return fi_send(tx_ep(conn), buf->data, buf->len, desc, 0, &buf->core);
	iovec iov{buf->data, buf->len};
	return send_core(tx_ep(conn), &iov, &desc, 1, &buf->core, true);
}

ssize_t RxmEndpoint::send_direct(RxmConn *conn, TxBuffer *buf, const struct iovec *iov,
				 size_t count, uint64_t from, size_t len, bool more)
{
	iovec pieces[kMaxCoreIov];
	void *desc[kMaxCoreIov] = {};
	size_t used = 0;
	pieces[0] = {buf->data, kWireHeaderSize};
	if (!slice_iov(iov, count, from, len, pieces + 1, tx_iov_limit(conn) - 1, &used))
		return -FI_E2BIG;
	buf->len = kWireHeaderSize; // the header; the payload stays in the application's memory
	return send_core(tx_ep(conn), pieces, desc, used + 1, &buf->core, more);
}

// rndv_done that also invalidates the key the peer offered (OFI_SEND_INVALIDATE): its core
// then reuses what served the key (verbs: the memory window) instead of freeing it with a
// system call. A core that refuses the flag gets the plain inject, now and from then on.
bool RxmEndpoint::inject_invalidating(RxmConn *conn, TxBuffer *buf, uint64_t peer_key)
{
	if (!domain_->core_refuses_send_invalidate()) {
		iovec iov{buf->data, buf->len};
		struct fi_msg msg = {};
		msg.msg_iov = &iov;
		msg.iov_count = 1;
		msg.data = peer_key;
		ssize_t ret = fi_sendmsg(tx_ep(conn), &msg, FI_INJECT | OFI_SEND_INVALIDATE);
		if (ret != -FI_EBADFLAGS)
			return ret == 0;
		domain_->note_core_refuses_send_invalidate();
	}
	return fi_inject(tx_ep(conn), buf->data, buf->len, 0) == 0;
}

// A control message (a rendezvous done, an acknowledgement) to a moved peer with nothing
// queued before it: its header straight into shm's ring. The queued path's op, bounce
// buffer, queue and generic inject cost ~400 instructions, and a rendezvous done lies on the
// receiver's critical path (sent before its receive completes). Anything shm cannot take at
// once (-FI_EAGAIN, an error) goes the queued path, which retries or reports it.
bool RxmEndpoint::send_control_at_once(RxmConn *conn, WireOp wire_op, uint64_t msg_id,
				       uint16_t flags)
{
	// shm_moved sets tx_on_shm when it leaves: it never goes this way.
	if (!conn->tx_on_shm || !shm_ || !shm_->send_ops || conn->state != ConnState::connected ||
	    !conn->backlog.empty())
		return false;
	WireHeader h;
	h.op = wire_op;
	h.msg_id = msg_id;
	h.flags = flags;
	h.conn_id = conn->peer_conn_id;
	// (no credits: over shm they wait for the next core message, credits_to_piggyback)
	uint8_t wire[kWireHeaderSize];
	encode_header(h, wire);
	if (!take_send_credit(conn))
		return false;
	if (shm_->send_ops->inject_framed(tx_ep(conn), wire, kWireHeaderSize, nullptr, 0, 0)) {
		return_send_credit(conn);
		return false;
	}
	send_for_coalescing(false, conn); // a send of this pass, as pump_one's
	return true;
}

bool RxmEndpoint::send_control(RxmConn *conn, WireOp wire_op, uint64_t msg_id, uint16_t flags,
			       const uint64_t *invalidate_key)
{
	if (!invalidate_key && send_control_at_once(conn, wire_op, msg_id, flags))
		return true;
	TxOp *op = alloc_op();
	if (!op) {
		RXM_WARN(FI_LOG_EP_DATA, "no room for a control message\n");
		return false;
	}
	op->kind = TxKind::control;
	op->conn = conn;
	op->hdr.op = wire_op;
	op->hdr.msg_id = msg_id;
	op->hdr.flags = flags;
	if (invalidate_key) {
		op->key_invalidatable = true;
		op->peer_key = *invalidate_key;
	}
	queue_op(conn, op);
	return true;
}

ssize_t RxmEndpoint::send(const void *buf, size_t len, void *desc, fi_addr_t dest, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, &desc, 1, dest, context, 0, 0, tx_op_flags(), false);
}

ssize_t RxmEndpoint::sendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			   void *context)
{
	return send_common(iov, desc, count, dest, context, 0, 0, tx_op_flags(), false);
}

ssize_t RxmEndpoint::sendmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (!flags_allowed(flags, kSendMsgFlags))
		return -FI_EBADFLAGS;
	return send_common(msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->context,
			   msg->data, 0, flags & ~kNoCompletionFlag, false);
}

ssize_t RxmEndpoint::inject(const void *buf, size_t len, fi_addr_t dest)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, nullptr, 1, dest, nullptr, 0, 0, FI_INJECT | kNoCompletionFlag,
			   false);
}

ssize_t RxmEndpoint::senddata(const void *buf, size_t len, void *desc, uint64_t data,
			      fi_addr_t dest, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, &desc, 1, dest, context, data, 0, tx_op_flags() | FI_REMOTE_CQ_DATA,
			   false);
}

ssize_t RxmEndpoint::injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t dest)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, nullptr, 1, dest, nullptr, data, 0,
			   FI_INJECT | FI_REMOTE_CQ_DATA | kNoCompletionFlag, false);
}

ssize_t RxmEndpoint::tsend(const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag,
			   void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, &desc, 1, dest, context, 0, tag, tx_op_flags(), true);
}

ssize_t RxmEndpoint::tsendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			    uint64_t tag, void *context)
{
	return send_common(iov, desc, count, dest, context, 0, tag, tx_op_flags(), true);
}

ssize_t RxmEndpoint::tsendmsg(const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (!flags_allowed(flags, kTaggedSendMsgFlags))
		return -FI_EBADFLAGS;
	return send_common(msg->msg_iov, msg->desc, msg->iov_count, msg->addr, msg->context,
			   msg->data, msg->tag, flags & ~kNoCompletionFlag, true);
}

ssize_t RxmEndpoint::tinject(const void *buf, size_t len, fi_addr_t dest, uint64_t tag)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, nullptr, 1, dest, nullptr, 0, tag, FI_INJECT | kNoCompletionFlag,
			   true);
}

ssize_t RxmEndpoint::tsenddata(const void *buf, size_t len, void *desc, uint64_t data,
			       fi_addr_t dest, uint64_t tag, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, &desc, 1, dest, context, data, tag,
			   tx_op_flags() | FI_REMOTE_CQ_DATA, true);
}

ssize_t RxmEndpoint::tinjectdata(const void *buf, size_t len, uint64_t data, fi_addr_t dest,
				 uint64_t tag)
{
	iovec iov{const_cast<void *>(buf), len};
	return send_common(&iov, nullptr, 1, dest, nullptr, data, tag,
			   FI_INJECT | FI_REMOTE_CQ_DATA | kNoCompletionFlag, true);
}

} // namespace rxm
