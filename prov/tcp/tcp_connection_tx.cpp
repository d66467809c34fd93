// Connection: pools, posting of operations and the send side of the stream.
#include "prov/tcp/tcp_connection.h"

#include "prov/tcp/tcp_provider.h"

#include <rdma/fi_errno.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace tcp {

TxPool::TxPool(size_t entries, size_t inject_size)
    : entries_(entries), inject_size_(inject_size),
      inject_storage_(inject_size ? entries * (kWireHeaderSize + inject_size) : 0)
{
}

TxEntry *TxPool::get()
{
	TxEntry *e = entries_.get_as_left();
	if (!e)
		return nullptr;
	size_t slot = entries_.index(e);
	// Reset field by field, not as a whole new TxEntry (~300 bytes, one per send): the
	// header bytes and the cursors' buffer lists are always written before they are read.
	e->kind = TxKind::msg;
	e->in_use = true;
	e->needs_response = false;
	e->awaiting_response = false;
	e->silent = false;
	e->op_flags = 0;
	e->id = slot | (static_cast<uint64_t>(generation_++) << 32);
	e->context = nullptr;
	e->cq_flags = 0;
	e->len = 0;
	e->out.clear();
	e->read_into.clear();
	// Each slot: room for the header, then the payload (append_payload).
	e->inject = inject_size_ ? inject_storage_.data() + slot * (kWireHeaderSize + inject_size_) +
					   kWireHeaderSize
				 : nullptr;
	e->region_key = 0;
	e->region_serial = 0;
	e->started = false;
	e->next = nullptr;
	return e;
}

void TxPool::put(TxEntry *e)
{
	e->in_use = false;
	e->awaiting_response = false;
	entries_.put(e);
}

TxEntry *TxPool::find_awaiting(uint64_t id)
{
	TxEntry *e = entries_.at(id & 0xffffffffu);
	return e && e->in_use && e->awaiting_response && e->id == id ? e : nullptr;
}

Connection::Connection(ConnectionOwner &owner, const Limits &limits)
    : owner_(owner), limits_(limits), tx_pool_(limits.tx_size, limits.inject_size),
      // The peer may have this many reads and acknowledged operations in flight before we
      // stop reading its stream; it bounds memory, not correctness.
      response_pool_(limits.rx_size + limits.tx_size, 0), own_rx_(limits.rx_size)
{
}

Connection::~Connection()
{
	if (fd_ >= 0)
		::close(fd_);
}

void Connection::attach(int fd)
{
	fd_ = fd;
	progress_tx();
}

void Connection::enqueue(TxEntry *e)
{
	e->next = nullptr;
	if (tx_tail_)
		tx_tail_->next = e;
	else
		tx_head_ = e;
	tx_tail_ = e;
}

void Connection::complete_tx(TxEntry *e, int err)
{
	if (e->kind == TxKind::ack || e->kind == TxKind::read_response) {
		response_pool_.put(e);
		return;
	}
	void *context = e->context;
	uint64_t op_flags = e->op_flags, cq_flags = e->cq_flags;
	size_t len = e->len;
	bool silent = e->silent;
	tx_pool_.put(e);
	if (!silent || err)
		owner_.tx_done(context, op_flags, cq_flags, len, err);
	else
		owner_.tx_counted(cq_flags);
}

TxEntry *Connection::new_response(WireOp op, uint64_t id, int status, uint64_t size)
{
	TxEntry *e = response_pool_.get();
	if (!e)
		return nullptr;
	e->kind = op == WireOp::ack ? TxKind::ack : TxKind::read_response;
	WireHeader h;
	h.op = op;
	h.id = id;
	h.status = status;
	h.size = size;
	encode_header(h, e->header);
	e->out.append(e->header, kWireHeaderSize);
	return e;
}

namespace {

// Sums buffer lengths; false on overflow or too many buffers.
bool total_length(const iovec *iov, size_t count, size_t *total)
{
	if (count > kIovLimit || (count && !iov))
		return false;
	size_t sum = 0;
	for (size_t i = 0; i < count; i++) {
		if (__builtin_add_overflow(sum, iov[i].iov_len, &sum))
			return false;
		if (iov[i].iov_len && !iov[i].iov_base)
			return false;
	}
	*total = sum;
	return true;
}

} // namespace

TxEntry *Connection::new_request(TxKind kind, const PostArgs &args, size_t total)
{
	TxEntry *e = tx_pool_.get();
	if (!e)
		return nullptr;
	e->kind = kind;
	e->context = args.context;
	e->op_flags = args.op_flags;
	e->silent = args.silent;
	e->len = total;
	return e;
}

// A payload that fits the entry's inline storage (every inject, and any small send) is copied
// there behind a copy of the header: the operation leaves as one buffer. A sendmsg of one
// small buffer costs the kernel less than of two (header, payload), and copying ~100 bytes
// is cheaper than that difference. The header must be encoded before this is called.
void Connection::append_payload(TxEntry *e, const PostArgs &args, size_t total)
{
	if (e->inject && total <= limits_.inject_size) {
		uint8_t *framed = e->inject - kWireHeaderSize;
		memcpy(framed, e->header, kWireHeaderSize);
		size_t at = 0;
		for (size_t i = 0; i < args.count; i++) {
			memcpy(e->inject + at, args.iov[i].iov_base, args.iov[i].iov_len);
			at += args.iov[i].iov_len;
		}
		e->out.append(framed, kWireHeaderSize + total);
		return;
	}
	e->out.append(e->header, kWireHeaderSize);
	for (size_t i = 0; i < args.count; i++)
		e->out.append(args.iov[i].iov_base, args.iov[i].iov_len);
}

// A silent inject with nothing queued before it (a ping-pong's every message under rxm)
// leaves from the stack in one sendmsg: no entry, no cursor, no completion to hand back
// (only counted). Bytes the socket did not take are queued as an entry, as if the message
// had been queued and sent in part. Returns false (nothing sent) when it does not apply.
bool Connection::inject_at_once(const PostArgs &args, size_t total)
{
	constexpr size_t kMaxPayload = 1024; // bounds the stack frame
	if (!args.copy || !args.silent || args.want_ack || args.defer || tx_head_ || !active() ||
	    total > kMaxPayload || total > limits_.inject_size || limits_.inject_size == 0 ||
	    (args.op_flags & FI_REMOTE_CQ_DATA) || tx_pool_.available() == 0)
		return false; // (no free entry: the queued path answers -FI_EAGAIN, as before)
	uint8_t frame[kShortHeaderSize + kMaxPayload];
	encode_short_msg_header(static_cast<uint32_t>(total), frame);
	size_t at = kShortHeaderSize;
	for (size_t i = 0; i < args.count; i++) {
		if (args.iov[i].iov_len)
			memcpy(frame + at, args.iov[i].iov_base, args.iov[i].iov_len);
		at += args.iov[i].iov_len;
	}
	iovec one{frame, at};
	msghdr m{};
	m.msg_iov = &one;
	m.msg_iovlen = 1;
	ssize_t n;
	do
		n = sendmsg(fd_, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (static_cast<size_t>(n) == at && n > 0) {
		owner_.tx_counted(FI_SEND | FI_MSG);
		return true;
	}
	// Partly sent, or not at all (a full socket; a failed one is found again by the
	// queued path's sendmsg): the rest waits in an entry, framed as sent.
	TxEntry *e = new_request(TxKind::msg, args, total); // one is free (checked above)
	if (!e) {
		if (n > 0) // the peer has part of a frame: the stream cannot go on
			lost(FI_ENOMEM);
		return n > 0;
	}
	e->cq_flags = FI_SEND | FI_MSG;
	uint8_t *framed = e->inject - kWireHeaderSize;
	memcpy(framed, frame, at);
	e->out.append(framed, at);
	enqueue(e);
	if (n > 0) {
		e->out.advance(static_cast<size_t>(n));
		e->started = true;
		tx_blocked_ = true;
	} else {
		progress_tx();
	}
	return true;
}

int Connection::send_framed(const void *hdr, size_t hdr_len, const iovec *payload,
			     size_t count, size_t payload_len)
{
	size_t total = kShortHeaderSize + hdr_len + payload_len;
	if (tx_head_ || !active() || hdr_len > kFramedHeaderMax ||
	    payload_len > kFramedMax || total > kFramedMax || count > kIovLimit ||
	    tx_pool_.available() == 0)
		return -FI_EAGAIN;
	uint8_t frame[kShortHeaderSize + kFramedHeaderMax + kFramedCopy];
	encode_short_msg_header(static_cast<uint32_t>(hdr_len + payload_len), frame);
	memcpy(frame + kShortHeaderSize, hdr, hdr_len);
	size_t at = kShortHeaderSize + hdr_len;
	iovec iov[1 + kIovLimit];
	size_t iov_count = 1;
	if (payload_len <= kFramedCopy) {
		for (size_t i = 0; i < count; i++) {
			if (payload[i].iov_len)
				memcpy(frame + at, payload[i].iov_base, payload[i].iov_len);
			at += payload[i].iov_len;
		}
	} else {
		for (size_t i = 0; i < count; i++)
			if (payload[i].iov_len)
				iov[iov_count++] = payload[i];
	}
	iov[0] = {frame, at};
	msghdr m{};
	m.msg_iov = iov;
	m.msg_iovlen = iov_count;
	ssize_t n;
	do
		n = sendmsg(fd_, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (static_cast<size_t>(n) == total) {
		owner_.tx_counted(FI_SEND | FI_MSG);
		return 0;
	}
	// Nothing sent (a full socket; a failed one is found again by the plain path).
	if (n <= 0)
		return -FI_EAGAIN;
	// The peer has the first n bytes: the rest is ours to send, from spill_. It is made
	// the first time a frame goes out in part (a full socket), not for every connection:
	// an idle peer costs nothing, one that streams small frames 16 KiB, and only one that
	// streams large frames the 64 KiB of the largest.
	size_t sent = static_cast<size_t>(n), rest = total - sent, out = 0;
	if (rest > spill_size_) {
		size_t size = std::max(rest, kSpillMin);
		spill_.reset(new (std::nothrow) uint8_t[size]);
		spill_size_ = spill_ ? size : 0;
	}
	if (!spill_) { // part of a frame is out and the rest has nowhere to go: the stream ends
		lost(FI_ENOMEM);
		return 0;
	}
	for (size_t i = 0; i < iov_count; i++) {
		size_t len = iov[i].iov_len;
		if (sent >= len) {
			sent -= len;
			continue;
		}
		memcpy(spill_.get() + out, static_cast<const uint8_t *>(iov[i].iov_base) + sent,
		       len - sent);
		out += len - sent;
		sent = 0;
	}
	PostArgs args;
	args.silent = true;
	TxEntry *e = new_request(TxKind::msg, args, hdr_len + payload_len); // one is free
	if (!e) { // (a slot that could not be made resident) part of a frame: the stream ends
		lost(FI_ENOMEM);
		return 0;
	}
	e->cq_flags = FI_SEND | FI_MSG;
	e->out.append(spill_.get(), rest);
	e->started = true;
	enqueue(e);
	tx_blocked_ = true;
	return 0;
}

int Connection::post_msg(const PostArgs &args)
{
	size_t total = 0;
	if (!total_length(args.iov, args.count, &total) ||
	    (args.copy && total > limits_.inject_size))
		return -FI_EINVAL;
	if (failed_)
		return -FI_ENOTCONN;
	if (inject_at_once(args, total))
		return 0;
	TxEntry *e = new_request(TxKind::msg, args, total);
	if (!e)
		return -FI_EAGAIN;
	e->cq_flags = FI_SEND | FI_MSG;
	e->needs_response = args.want_ack;
	WireHeader h;
	h.op = WireOp::msg;
	h.size = total;
	h.id = e->id;
	if (args.op_flags & FI_REMOTE_CQ_DATA) {
		h.flags |= kWireFlagRemoteData;
		h.cq_data = args.data;
	}
	if (args.want_ack)
		h.flags |= kWireFlagWantAck;
	encode_header(h, e->header);
	append_payload(e, args, total);
	enqueue(e);
	if (args.defer) {
		deferred_iov_ += static_cast<size_t>(e->out.current_count());
		deferred_bytes_ += e->out.remaining();
		if (deferred_iov_ < kGatherIov && deferred_bytes_ < kGatherBytes)
			return 0;
	}
	progress_tx();
	return 0;
}

int Connection::post_write(const PostArgs &args, const fi_rma_iov &target)
{
	size_t total = 0;
	if (!total_length(args.iov, args.count, &total) || total != target.len ||
	    (args.copy && total > limits_.inject_size))
		return -FI_EINVAL;
	if (failed_)
		return -FI_ENOTCONN;
	TxEntry *e = new_request(TxKind::write, args, total);
	if (!e)
		return -FI_EAGAIN;
	e->cq_flags = FI_RMA | FI_WRITE;
	// The target's verdict on key, range and rights comes back in an ack.
	e->needs_response = true;
	WireHeader h;
	h.op = WireOp::write;
	h.flags = kWireFlagWantAck;
	h.size = total;
	h.id = e->id;
	h.rma_key = target.key;
	h.rma_offset = target.addr;
	if (args.op_flags & FI_REMOTE_CQ_DATA) {
		h.flags |= kWireFlagRemoteData;
		h.cq_data = args.data;
	}
	encode_header(h, e->header);
	append_payload(e, args, total);
	enqueue(e);
	progress_tx();
	return 0;
}

int Connection::post_read(const PostArgs &args, const fi_rma_iov &target)
{
	size_t total = 0;
	if (!total_length(args.iov, args.count, &total) || total != target.len || args.copy)
		return -FI_EINVAL;
	if (failed_)
		return -FI_ENOTCONN;
	TxEntry *e = new_request(TxKind::read, args, total);
	if (!e)
		return -FI_EAGAIN;
	e->cq_flags = FI_RMA | FI_READ;
	e->needs_response = true;
	for (size_t i = 0; i < args.count; i++)
		e->read_into.append(args.iov[i].iov_base, args.iov[i].iov_len);
	WireHeader h;
	h.op = WireOp::read_request;
	h.size = total;
	h.id = e->id;
	h.rma_key = target.key;
	h.rma_offset = target.addr;
	encode_header(h, e->header);
	e->out.append(e->header, kWireHeaderSize);
	enqueue(e);
	progress_tx();
	return 0;
}

void Connection::progress_tx()
{
	deferred_iov_ = deferred_bytes_ = 0;
	tx_blocked_ = false;
	while (tx_head_ && active()) {
		// Every queued operation (header and payload buffers of each) goes out in one
		// sendmsg, so a backlog (a window of sends posted while the socket was full, acks
		// and read responses behind them) costs one system call, not one per entry.
		iovec iov[kGatherIov];
		size_t iov_count = 0, bytes = 0, entries = 0;
		bool large = false;
		for (TxEntry *e = tx_head_; e; e = e->next) {
			// Read responses: the registration is checked before any of it is sent.
			if (e->region_serial && !e->out.done() &&
			    !owner_.region_alive(e->region_key, e->region_serial) &&
			    !abandon_read_response(e))
				return;
			size_t n = static_cast<size_t>(e->out.current_count());
			size_t len = e->out.remaining();
			large = large || len >= kGatherLargeOp;
			if (entries && (iov_count + n > kGatherIov || bytes >= kGatherBytes ||
					(large && bytes >= kGatherLargeBytes)))
				break;
			std::copy(e->out.current(), e->out.current() + n, iov + iov_count);
			iov_count += n;
			bytes += len;
			entries++;
		}
		size_t sent = 0;
		if (bytes) {
			msghdr m{};
			m.msg_iov = iov;
			m.msg_iovlen = iov_count;
			ssize_t n = sendmsg(fd_, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (n < 0) {
				if (errno == EINTR)
					continue;
				if (errno != EAGAIN && errno != EWOULDBLOCK)
					lost(FI_ECONNRESET);
				tx_blocked_ = true;
				return;
			}
			sent = static_cast<size_t>(n);
		}
		// Hands the bytes sent to the entries in order; the first one not finished
		// means the socket is full.
		for (size_t i = 0; i < entries && tx_head_; i++) {
			TxEntry *e = tx_head_;
			size_t step = std::min(sent, e->out.remaining());
			e->out.advance(step);
			sent -= step;
			e->started = e->started || step > 0;
			if (!e->out.done()) {
				tx_blocked_ = true;
				return;
			}
			tx_head_ = e->next;
			if (!tx_head_)
				tx_tail_ = nullptr;
			if (e->needs_response)
				e->awaiting_response = true;
			else
				complete_tx(e, 0);
		}
	}
}

bool Connection::abandon_read_response(TxEntry *e)
{
	if (e->started) {
		// Part of the payload is on the wire and the peer expects the rest of that exact
		// length: the only way to stop reading the region is to end the stream.
		FI_WARN(&provider, FI_LOG_EP_DATA,
			"region closed while a remote read was being answered from it: "
			"closing the connection\n");
		lost(FI_ECONNABORTED);
		return false;
	}
	// Not started: answer like an unknown key (the key no longer exists). The header we
	// encoded carries the peer's request id; keep it, drop the payload.
	WireHeader h;
	if (decode_header(e->header, UINT64_MAX, &h) != 0) {
		lost(FI_EIO);
		return false;
	}
	h.status = -FI_EINVAL;
	h.size = 0;
	encode_header(h, e->header);
	e->out.clear();
	e->out.append(e->header, kWireHeaderSize);
	e->region_serial = 0;
	return true;
}

void Connection::stop()
{
	if (failed_)
		return;
	failed_ = true;
	if (fd_ >= 0)
		::shutdown(fd_, SHUT_RDWR);
	tx_head_ = tx_tail_ = nullptr;
	reply_ = nullptr;
	read_ = nullptr;
	// A shared receive this stream was filling was never completed: it stays posted.
	if (matched_taken_ && matched_)
		rxq_->push_front(matched_);
	cancel_placed();
	// A receive of this endpoint being filled learns why the stream stopped, when there is
	// more to say than "cancelled" (a stalled peer: FI_ETIMEDOUT).
	if (stop_err_ && matched_ && !matched_taken_ && own_rx_.head() == matched_) {
		RxEntry *r = matched_;
		matched_ = nullptr;
		own_rx_.pop_head();
		complete_cancelled(r, stop_err_);
	}
	reset_rx();
	response_pool_.for_each_in_use([this](TxEntry *e) { response_pool_.put(e); });
	tx_pool_.for_each_in_use([this](TxEntry *e) { complete_tx(e, FI_ECANCELED); });
	// Nothing will arrive for the receives posted to this endpoint: the application gets
	// each buffer back with FI_ECANCELED (those of a shared context stay there).
	flush_own_recvs();
}

void Connection::lost(int err)
{
	if (failed_)
		return;
	stop();
	owner_.connection_lost(err);
}

bool Connection::fail_if_stalled()
{
	if (!mid_frame())
		return false;
	char byte;
	ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		return false; // bytes (or the end, or an error) wait: the next read handles them
	FI_WARN(&provider, FI_LOG_EP_DATA,
		"dropping connection: the peer sent part of a frame and then nothing for "
		"FI_TCP_RX_STALL_TIMEOUT\n");
	stop_err_ = FI_ETIMEDOUT;
	lost(FI_ETIMEDOUT);
	return true;
}

void Connection::protocol_error(const char *why)
{
	FI_WARN(&provider, FI_LOG_EP_DATA, "dropping connection: peer violated protocol (%s)\n",
		why);
	lost(FI_EIO);
}

} // namespace tcp
