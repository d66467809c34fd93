// Connection: the receive side of the stream (posted receives, header dispatch, payload
// placement, serving the peer's RMA requests and completing ours).
#include "prov/tcp/tcp_connection.h"

#include "prov/tcp/tcp_provider.h"

#include <rdma/fi_errno.h>

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <new>

namespace tcp {

int RxQueue::post(const iovec *iov, size_t count, void *context, uint64_t op_flags)
{
	if (count > kIovLimit || (count && !iov))
		return -FI_EINVAL;
	if ((op_flags & FI_MULTI_RECV) && count != 1)
		return -FI_EINVAL;
	size_t capacity = 0;
	for (size_t i = 0; i < count; i++) {
		if ((iov[i].iov_len && !iov[i].iov_base) ||
		    __builtin_add_overflow(capacity, iov[i].iov_len, &capacity))
			return -FI_EINVAL;
	}
	RxEntry *r = entries_.get();
	if (!r)
		return -FI_EAGAIN;
	*r = RxEntry{};
	r->context = context;
	r->op_flags = op_flags;
	for (size_t i = 0; i < count; i++)
		r->iov[i] = iov[i];
	r->iov_count = count;
	r->capacity = capacity;
	if (tail_)
		tail_->next = r;
	else
		head_ = r;
	tail_ = r;
	return 0;
}

void RxQueue::pop_head()
{
	head_ = head_->next;
	if (!head_)
		tail_ = nullptr;
}

void RxQueue::push_front(RxEntry *r)
{
	r->holder = nullptr;
	r->next = head_;
	head_ = r;
	if (!tail_)
		tail_ = r;
}

RxEntry *RxQueue::unlink(void *context, const RxEntry *busy)
{
	RxEntry *prev = nullptr;
	for (RxEntry *r = head_; r; prev = r, r = r->next) {
		if (r->context != context || r == busy)
			continue;
		(prev ? prev->next : head_) = r->next;
		if (tail_ == r)
			tail_ = prev;
		return r;
	}
	return nullptr;
}

void Connection::use_shared_rx(RxQueue *queue)
{
	if (matched_taken_ && matched_) {
		// Never completed: it stays posted on the shared context, and this stream
		// (closing) will not read the rest of that message.
		rxq_->push_front(matched_);
		reset_rx();
	}
	// A message being placed for the placer is dropped silently (closing: fi_endpoint).
	if (rx_state_ == RxState::payload && target_ == RxTarget::placed)
		reset_rx();
	rxq_ = queue ? queue : &own_rx_;
}

int Connection::post_recv(const iovec *iov, size_t count, void *context, uint64_t op_flags)
{
	if (shared_rx())
		return -FI_EOPNOTSUPP; // receives go to the shared context
	if (failed_)
		return -FI_ENOTCONN; // nothing will ever arrive to complete it
	int ret = own_rx_.post(iov, count, context, op_flags);
	if (ret == 0 && rx_state_ == RxState::pending)
		progress_rx();
	return ret;
}

int Connection::cancel_recv(void *context)
{
	RxEntry *r = own_rx_.unlink(context, matched_);
	if (!r)
		return -FI_ENOENT;
	complete_cancelled(r);
	return 0;
}

void Connection::complete_cancelled(RxEntry *r, int err)
{
	void *context = r->context;
	uint64_t op_flags = r->op_flags;
	uint64_t flags = FI_RECV | FI_MSG | (op_flags & FI_MULTI_RECV);
	void *buf = r->iov_count ? r->iov[0].iov_base : nullptr;
	own_rx_.release(r);
	owner_.rx_done(context, op_flags, flags, buf, 0, 0, err, 0);
}

void Connection::flush_own_recvs()
{
	while (RxEntry *r = own_rx_.head()) {
		own_rx_.pop_head();
		complete_cancelled(r);
	}
}

void Connection::reset_rx()
{
	rx_state_ = RxState::header;
	header_got_ = 0;
	matched_ = nullptr;
	matched_taken_ = false;
	placed_context_ = nullptr;
	discard_left_ = 0;
	into_.clear();
	parked_.reset();
	parked_len_ = 0;
	parked_got_ = 0;
}

// The stage a progress_rx call reads into: one per thread (calls for different connections
// run one after the other), taken by a nested call only if none is running. Allocated on the
// thread's first read, not per call.
struct ThreadStage {
	std::unique_ptr<uint8_t[]> bytes;
	bool busy = false;
};

namespace {

thread_local ThreadStage thread_stage;

} // namespace

void Connection::take_stage()
{
	thread_stage_ = &thread_stage;
	if (kept_) {
		// Bytes kept from the last call are read where they are (stage_pos_ onwards).
		stage_ = kept_.get();
		stage_kind_ = StageKind::kept;
		return;
	}
	stage_ = nullptr;
	stage_kind_ = StageKind::none;
	stage_pos_ = stage_len_ = 0;
}

bool Connection::fresh_stage()
{
	if (stage_kind_ == StageKind::shared || stage_kind_ == StageKind::own) {
		stage_pos_ = stage_len_ = 0;
		return true;
	}
	// The kept bytes are used up (a read is due only then).
	kept_.reset();
	stage_pos_ = stage_len_ = 0;
	ThreadStage &shared = *thread_stage_;
	if (!shared.busy) {
		if (!shared.bytes)
			shared.bytes.reset(new (std::nothrow) uint8_t[kStageSize]);
		if (shared.bytes) {
			shared.busy = true;
			stage_ = shared.bytes.get();
			stage_kind_ = StageKind::shared;
			return true;
		}
	} else {
		// A nested call (another connection's progress runs on this thread): a private
		// stage for the length of this call.
		own_stage_.reset(new (std::nothrow) uint8_t[kStageSize]);
		if (own_stage_) {
			stage_ = own_stage_.get();
			stage_kind_ = StageKind::own;
			return true;
		}
	}
	stage_ = nullptr;
	stage_kind_ = StageKind::none;
	FI_WARN(&provider, FI_LOG_EP_DATA, "no memory for a %zu-byte read stage\n", kStageSize);
	lost(FI_ENOMEM);
	return false;
}

void Connection::put_stage()
{
	size_t left = staged();
	if (stage_kind_ == StageKind::shared && !left) {
		// The common end of a call (every empty busy pass): all that was read is used,
		// nothing to keep (kept_ was let go when the shared stage was taken).
		thread_stage_->busy = false;
		stage_ = nullptr;
		stage_kind_ = StageKind::none;
		stage_pos_ = stage_len_ = 0;
		return;
	}
	switch (stage_kind_) {
	case StageKind::kept:
		// Still the leftovers of an earlier call: they stay where they are.
		if (!left) {
			kept_.reset();
			stage_pos_ = stage_len_ = 0;
		}
		break;
	case StageKind::shared:
	case StageKind::own: {
		// Bytes read ahead (e.g. messages waiting for a receive buffer) stay with the
		// connection in an allocation of exactly their size: with many peers sending to
		// one endpoint at once, most connections hold one small message here, not a
		// whole stage.
		std::unique_ptr<uint8_t[]> keep;
		if (left) {
			keep.reset(new (std::nothrow) uint8_t[left]);
			if (keep)
				memcpy(keep.get(), stage_ + stage_pos_, left);
		}
		if (stage_kind_ == StageKind::shared)
			thread_stage_->busy = false;
		own_stage_.reset();
		kept_ = std::move(keep);
		stage_pos_ = 0;
		stage_len_ = kept_ ? left : 0;
		if (left && !kept_) {
			// The bytes are out of the socket and cannot be put back.
			FI_WARN(&provider, FI_LOG_EP_DATA,
				"no memory to keep %zu bytes read ahead\n", left);
			lost(FI_ENOMEM);
		}
		break;
	}
	case StageKind::none:
		break;
	}
	stage_ = nullptr;
	stage_kind_ = StageKind::none;
}

bool Connection::progress_rx()
{
	// A call nested in another (a receive posted from a completion) keeps the outer's flag.
	bool outer = got_bytes_;
	got_bytes_ = false;
	take_stage();
	read_stream();
	put_stage();
	bool got = got_bytes_;
	got_bytes_ = outer || got;
	return got;
}

void Connection::read_stream()
{
	// A bounded number of socket reads per call so one busy peer cannot starve the others;
	// bytes already in the stage are always processed (epoll would not report them).
	int budget = 64;
	drained_ = false;
	while (active()) {
		if (!staged() && budget-- <= 0)
			return;
		switch (rx_state_) {
		case RxState::header:
			if (!read_header())
				return;
			rx_state_ = RxState::pending;
			[[fallthrough]];
		case RxState::pending:
			if (!start_operation())
				return;
			break;
		case RxState::payload:
			if (!read_payload())
				return;
			break;
		case RxState::parked:
		case RxState::parked_waiting:
			if (!resume_parked())
				return;
			break;
		}
	}
}

bool Connection::socket_result(ssize_t n, size_t asked)
{
	if (n > 0) {
		got_bytes_ = true;
		rx_reads_++;
		if (static_cast<size_t>(n) < asked)
			drained_ = true;
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
		drained_ = errno != EINTR;
		return false;
	}
	lost(n == 0 ? 0 : FI_ECONNRESET);
	return false;
}

bool Connection::fill_stage(size_t want)
{
	if (drained_ || !fresh_stage())
		return false;
	ssize_t n = recv(fd_, stage_, want, MSG_DONTWAIT);
	if (!socket_result(n, want))
		return false;
	stage_pos_ = 0;
	stage_len_ = static_cast<size_t>(n);
	return true;
}

bool Connection::read_header()
{
	if (header_got_ == 0) {
		if (!staged() && !fill_stage(header_read_))
			return false;
		if (staged() >= kHeaderSizeBytes) {
			// Nearly always: the whole header came in the stage; decode it where it
			// lies, no copy into header_buf_ first.
			const uint8_t *bytes = stage_ + stage_pos_;
			size_t len = header_size(bytes);
			if (staged() >= len) {
				stage_pos_ += len;
				return decode_read_header(bytes);
			}
		}
	}
	// In pieces: its first bytes say how long it is (short or full form).
	for (;;) {
		size_t need = header_got_ < kHeaderSizeBytes ? kHeaderSizeBytes
							     : header_size(header_buf_);
		if (header_got_ >= need)
			break;
		if (!staged() && !fill_stage(header_read_))
			return false;
		size_t n = std::min(staged(), need - header_got_);
		memcpy(header_buf_ + header_got_, stage_ + stage_pos_, n);
		stage_pos_ += n;
		header_got_ += n;
	}
	return decode_read_header(header_buf_);
}

bool Connection::decode_read_header(const uint8_t *bytes)
{
	if (decode_header(bytes, UINT64_MAX, &header_) != 0) {
		protocol_error("malformed header");
		return false;
	}
	// After a payload too large for the stage, the next header is read with a tail-sized
	// read: a whole stage would take the next large payload's first 16 KiB into the stage
	// and copy them out (fi_bw at 32 KiB: a third of the messages began that way, when the
	// reader had caught up with the sender and the last read brought no tail).
	header_read_ = header_.size > kStageSize - kStageTail ? kStageTail : kStageSize;
	return true;
}

bool Connection::start_operation()
{
	switch (header_.op) {
	case WireOp::msg:
		return start_message();
	case WireOp::write:
		return start_write();
	case WireOp::read_request:
		return start_read_request();
	case WireOp::read_response:
		return start_read_response();
	case WireOp::ack:
		return handle_ack();
	}
	protocol_error("unknown operation");
	return false;
}

bool Connection::start_message()
{
	if (messages_held_)
		return false; // held by the owner (rx_hold_ops.h): the stream waits, like below
	if ((header_.flags & kWireFlagWantAck) && !reply_) {
		reply_ = new_response(WireOp::ack, header_.id, 0, 0);
		if (!reply_)
			return false;
	}
	RxEntry *r = rxq_->head();
	if (!r && shared_rx() && reclaim_shared_receive())
		r = rxq_->head();
	if (consume_ && offer_to_consumer(r))
		return true;
	if (offer_to_placer(r, true)) {
		if (into_.done() && discard_left_ == 0)
			finish_payload();
		return true;
	}
	if (!r) {
		// Backpressure: the data stays in the socket until a receive is posted.
		if (shared_rx())
			owner_.rx_starved();
		return false;
	}
	fill_from_receive(r, header_.size);
	if (into_.done() && discard_left_ == 0)
		finish_payload();
	return true;
}

bool Connection::offer_to_placer(RxEntry *r, bool may_take)
{
	const RxPlacer &placer = rxq_->placer;
	if (!placer.place || !shared_rx())
		return false;
	ofi_rx_place_request req{};
	req.msg_len = header_.size;
	// The head is in the stage whenever the header came with it (nearly always: a header
	// arrives with the bytes behind it); otherwise the placer only hears where it goes.
	if (may_take && header_.size >= placer.head_len && staged() >= placer.head_len)
		req.head = stage_ + stage_pos_;
	req.rx_context = r ? r->context : nullptr;
	req.may_take = may_take;
	if (placer.place(placer.arg, &req) != 1 || !may_take)
		return false;
	into_.clear();
	for (size_t i = 0; i < req.iov_count && i < OFI_RX_PLACE_MAX_IOV; i++)
		into_.append(req.iov[i].iov_base, req.iov[i].iov_len);
	if (into_.remaining() > header_.size)
		into_.truncate(header_.size);
	matched_ = nullptr;
	matched_taken_ = false;
	matched_buf_ = req.iov_count ? req.iov[0].iov_base : nullptr;
	placed_context_ = req.context;
	placed_ = into_.remaining(); // short only if the placer gave too little room
	discard_left_ = header_.size - placed_;
	message_size_ = header_.size;
	target_ = RxTarget::placed;
	rx_state_ = RxState::payload;
	return true;
}

bool Connection::offer_to_consumer(RxEntry *r)
{
	// A small message nearly always came whole with its header in one recv. One carrying
	// remote CQ data needs a completion to deliver it, so it cannot be taken.
	bool whole = staged() >= header_.size && !(header_.flags & kWireFlagRemoteData);
	ofi_rx_inplace_request req{whole ? stage_ + stage_pos_ : nullptr,
				   static_cast<size_t>(header_.size), r ? r->context : nullptr};
	if (consume_(consume_arg_, &req) != 1 || !whole)
		return false;
	// Taken: no receive, no completion; the stream goes on after it.
	stage_pos_ += static_cast<size_t>(header_.size);
	TxEntry *reply = reply_; // the ack a delivery-complete sender waits for
	reply_ = nullptr;
	reset_rx();
	if (reply) {
		enqueue(reply);
		progress_tx();
	}
	return true;
}

void Connection::cancel_placed()
{
	if (rx_state_ != RxState::payload || target_ != RxTarget::placed)
		return;
	void *context = placed_context_;
	reset_rx();
	owner_.rx_done(context, FI_COMPLETION, FI_RECV | FI_MSG, nullptr, 0, 0,
		       stop_err_ ? stop_err_ : FI_ECANCELED, 0);
}

void Connection::fill_from_receive(RxEntry *r, uint64_t size)
{
	matched_ = r;
	if (shared_rx()) {
		// Other connections take from the same queue meanwhile.
		rxq_->pop_head();
		matched_taken_ = true;
		r->holder = this;
	}
	into_.clear();
	if (r->op_flags & FI_MULTI_RECV) {
		auto *base = static_cast<uint8_t *>(r->iov[0].iov_base) + r->multi_offset;
		size_t room = r->capacity - r->multi_offset;
		into_.append(base, size < room ? size : room);
		matched_buf_ = base;
	} else {
		for (size_t i = 0; i < r->iov_count; i++)
			into_.append(r->iov[i].iov_base, r->iov[i].iov_len);
		if (size < r->capacity)
			into_.truncate(size);
		matched_buf_ = r->iov_count ? r->iov[0].iov_base : nullptr;
	}
	placed_ = into_.remaining();
	discard_left_ = size - placed_;
	message_size_ = size;
	target_ = RxTarget::message;
	rx_state_ = RxState::payload;
}

bool Connection::start_write()
{
	uint8_t *addr = nullptr;
	int status = owner_.remote_access(header_.rma_key, header_.rma_offset, header_.size,
					  FI_REMOTE_WRITE, &addr, &write_serial_);
	write_key_ = header_.rma_key;
	if (!reply_) {
		reply_ = new_response(WireOp::ack, header_.id, status, 0);
		if (!reply_)
			return false;
	}
	into_.clear();
	if (status == 0) {
		into_.append(addr, header_.size);
		discard_left_ = 0;
	} else {
		FI_INFO(&provider, FI_LOG_EP_DATA, "refusing remote write: %s\n",
			fi_strerror(-status));
		discard_left_ = header_.size;
	}
	write_status_ = status;
	target_ = RxTarget::write;
	rx_state_ = RxState::payload;
	if (into_.done() && discard_left_ == 0)
		finish_payload();
	return true;
}

bool Connection::start_read_request()
{
	uint8_t *addr = nullptr;
	uint64_t serial = 0;
	int status = owner_.remote_access(header_.rma_key, header_.rma_offset, header_.size,
					  FI_REMOTE_READ, &addr, &serial);
	TxEntry *e = new_response(WireOp::read_response, header_.id, status,
				  status == 0 ? header_.size : 0);
	if (!e)
		return false;
	if (status == 0) {
		e->out.append(addr, header_.size);
		e->region_key = header_.rma_key;
		e->region_serial = serial;
		owner_.remote_done(FI_REMOTE_READ);
	} else
		FI_INFO(&provider, FI_LOG_EP_DATA, "refusing remote read: %s\n",
			fi_strerror(-status));
	enqueue(e);
	reset_rx();
	progress_tx();
	return true;
}

bool Connection::start_read_response()
{
	TxEntry *r = tx_pool_.find_awaiting(header_.id);
	if (!r || r->kind != TxKind::read) {
		protocol_error("read response for no outstanding read");
		return false;
	}
	if (header_.status != 0) {
		reset_rx();
		complete_tx(r, -header_.status);
		return true;
	}
	if (header_.size != r->len) {
		protocol_error("read response of the wrong length");
		return false;
	}
	read_ = r;
	into_ = r->read_into;
	discard_left_ = 0;
	target_ = RxTarget::read_response;
	rx_state_ = RxState::payload;
	if (into_.done())
		finish_payload();
	return true;
}

bool Connection::handle_ack()
{
	TxEntry *r = tx_pool_.find_awaiting(header_.id);
	if (!r || r->kind == TxKind::read) {
		protocol_error("ack for no outstanding operation");
		return false;
	}
	reset_rx();
	complete_tx(r, -header_.status);
	return true;
}

void Connection::abandon_write()
{
	FI_INFO(&provider, FI_LOG_EP_DATA,
		"region closed during a remote write: rest of the payload discarded\n");
	discard_left_ += into_.remaining();
	into_.clear();
	write_status_ = -FI_EINVAL; // what an unknown key gets: the key no longer exists
}

bool Connection::read_payload()
{
	// Checked before every placement: fi_close(mr) (under the domain lock, like this
	// progress) may have ended the region since the last one.
	if (target_ == RxTarget::write && write_status_ == 0 && !into_.done() &&
	    !owner_.region_alive(write_key_, write_serial_))
		abandon_write();
	if (!staged()) {
		if (!into_.done() && into_.remaining() >= kDirectRead) {
			// Large payloads go straight from the socket to their buffers.
			// The stage rides along as a last buffer when nothing is to be discarded,
			// so the next message's header (often a whole small message) comes with
			// the same system call.
			if (drained_ || !fresh_stage())
				return false;
			size_t payload = into_.remaining();
			iovec iov[IovCursor::kMaxSegments + 1];
			int count = into_.current_count();
			std::copy(into_.current(), into_.current() + count, iov);
			size_t asked = payload;
			if (discard_left_ == 0) {
				iov[count++] = {stage_, kStageTail};
				asked += kStageTail;
			}
			ssize_t n = readv(fd_, iov, count);
			if (!socket_result(n, asked))
				return false;
			size_t got = static_cast<size_t>(n);
			into_.advance(std::min(got, payload));
			if (got > payload) {
				stage_pos_ = 0;
				stage_len_ = got - payload;
			}
			if (into_.done() && discard_left_ == 0)
				finish_payload();
			return true;
		}
		if (!fill_stage(kStageSize))
			return false;
	}
	const uint8_t *src = stage_ + stage_pos_;
	size_t n;
	if (!into_.done()) {
		n = into_.fill(src, staged());
	} else {
		n = static_cast<size_t>(std::min<uint64_t>(discard_left_, staged()));
		discard_left_ -= n;
	}
	stage_pos_ += n;
	if (into_.done() && discard_left_ == 0)
		finish_payload();
	return true;
}

void Connection::finish_payload()
{
	RxTarget target = target_;
	TxEntry *reply = reply_;
	reply_ = nullptr;
	WireHeader h = header_;
	RxEntry *r = matched_;
	bool taken = matched_taken_;
	TxEntry *read = read_;
	read_ = nullptr;
	void *placed_context = placed_context_;
	reset_rx();

	switch (target) {
	case RxTarget::message: {
		bool truncated = placed_ < message_size_;
		uint64_t flags = FI_RECV | FI_MSG;
		if (h.flags & kWireFlagRemoteData)
			flags |= FI_REMOTE_CQ_DATA;
		bool release = true;
		if (r->op_flags & FI_MULTI_RECV) {
			r->multi_offset += placed_;
			size_t left = r->capacity - r->multi_offset;
			release = truncated || left == 0 || left < min_multi_recv_;
			if (release)
				flags |= FI_MULTI_RECV;
		}
		void *context = r->context;
		uint64_t op_flags = r->op_flags;
		if (release) {
			if (!taken)
				rxq_->pop_head();
			rxq_->release(r);
		} else if (taken) {
			rxq_->push_front(r); // shared contexts refuse multi-receive; never stranded
		}
		owner_.rx_done(context, op_flags, flags, matched_buf_, placed_, h.cq_data,
			       truncated ? FI_ETRUNC : 0, message_size_ - placed_);
		break;
	}
	case RxTarget::placed: {
		bool truncated = placed_ < message_size_;
		uint64_t flags = FI_RECV | FI_MSG;
		if (h.flags & kWireFlagRemoteData)
			flags |= FI_REMOTE_CQ_DATA;
		owner_.rx_done(placed_context, FI_COMPLETION, flags, matched_buf_, placed_, h.cq_data,
			       truncated ? FI_ETRUNC : 0, message_size_ - placed_);
		break;
	}
	case RxTarget::write:
		if (reply && write_status_) {
			// The verdict may have changed since the ack was prepared (abandon_write).
			WireHeader ack;
			ack.op = WireOp::ack;
			ack.id = h.id;
			ack.status = write_status_;
			encode_header(ack, reply->header);
		}
		if (write_status_ == 0)
			owner_.remote_done(FI_REMOTE_WRITE);
		if (write_status_ == 0 && (h.flags & kWireFlagRemoteData))
			owner_.rx_done(nullptr, 0, FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA,
				       nullptr, h.size, h.cq_data, 0, 0);
		break;
	case RxTarget::read_response:
		complete_tx(read, 0);
		break;
	case RxTarget::discard:
		break;
	}
	if (reply) {
		enqueue(reply);
		progress_tx();
	}
}

} // namespace tcp
