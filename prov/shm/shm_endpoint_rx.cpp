// ShmEndpoint: taking operations out of the receive ring. Every slot header is the peer's
// claim: it is copied out once, then checked (op, flags, lengths consistent with the
// operation being received, ids naming one of our pending operations) before a byte of
// payload is placed; any violation fails the connection.
#include "prov/shm/shm_endpoint.h"

#include <algorithm>
#include <cstring>

namespace shm {
namespace {

static_assert(kSlotPayload <= kMaxMsgSize, "a one-slot message is within the size limit");

// The verdicts a target may send back (positive FI_E*); anything else is a protocol error.
bool known_status(uint32_t status)
{
	return status == 0 || status == FI_EINVAL || status == FI_EACCES || status == FI_EIO;
}

// A continuation slot of operation `op` with `remaining` bytes still to come: the same
// operation, exactly what it still needs, nothing else (on a header copied out). Its
// status is the caller's to check: an answer's continuation may carry a verdict.
bool continues_message(const SlotHeader &c, uint32_t op, size_t remaining)
{
	return c.op == op && c.flags == 0 &&
	       c.total == remaining && c.len == std::min<size_t>(remaining, kSlotPayload) &&
	       c.id == 0 && c.rma_key == 0 && c.rma_addr == 0 && c.cq_data == 0;
}

} // namespace

bool ShmEndpoint::ready_for(uint32_t op)
{
	switch (op) {
	case kOpMsg:
		// A new message needs a receive; without one it waits in the ring (the sender
		// sees no room once the ring fills) until fi_recv drains again.
		while (!rx_queue_.empty() && rx_queue_.front().canceled)
			rx_queue_.pop();
		return !rx_queue_.empty();
	case kOpWrite:
	case kOpReadReq:
		// Each needs room for its answer; until push_tx makes some, the peer's
		// requests wait in its ring (it stalls only itself).
		if (responses_.full()) {
			rx_paused_ = true;
			return false;
		}
		return true;
	default:
		return true; // answers to us, or garbage that take_slot refuses
	}
}

bool ShmEndpoint::drain_rx()
{
	rx_paused_ = false;
	// The slots read in this pass are freed together (a failed connection has no ring).
	bool ok = drain_rx_slots();
	if (ok && rx_ring_.publish_tail())
		ring_doorbell(peer_bell_);
	return ok;
}

bool ShmEndpoint::drain_rx_slots()
{
	for (;;) {
		uint32_t ready = 0;
		if (!rx_ring_.ready_slots(&ready)) {
			connection_lost(-FI_EIO);
			return false;
		}
		// Empty: the doorbell is asked for only by before_sleep(), so a busy poller
		// costs the producer no system call.
		if (ready == 0)
			return true;
		for (uint32_t i = 0; i < ready;) {
			const uint8_t *slot = rx_ring_.slot();
			SlotHeader header;
			memcpy(&header, slot, sizeof(header));
			const uint8_t *payload = slot + sizeof(header);
			uint32_t taken = consumed_in_place(header, payload, ready - i);
			if (taken) {
				rx_ring_.consume(taken);
				i += taken;
				continue;
			}
			if (!incoming_.active && !ready_for(header.op))
				return true;
			if (!take_slot(header, payload))
				return false;
			rx_ring_.consume();
			i++;
		}
	}
}

// Once per message: inline in drain_rx_slots, the whole one-slot message without a call
// of its own; the rest out of line.
[[gnu::always_inline]] inline uint32_t
ShmEndpoint::consumed_in_place(const SlotHeader &h, const uint8_t *payload, uint32_t ready)
{
	// Every message is shown, checked as take_slot would first (a forged one is not offered
	// and fails the connection there); only a whole one without CQ data can be taken: in
	// this slot, or in pieces when all its slots are here. The others are shown so the
	// consumer knows which receive they take (order).
	if (!consume_ || incoming_.active || h.op != kOpMsg)
		return 0;
	// The common slot first: a whole message in this slot without CQ data, checked on
	// every field valid_slot looks at for it (no other flag, len == total within the
	// slot, status, id and RMA fields 0), in one test instead of its general walk.
	bool whole = h.flags == kSlotFirst && h.len == h.total && h.len <= kSlotPayload &&
		     (h.status | h.id | h.rma_key | h.rma_addr) == 0;
	if (!whole) [[unlikely]]
		return offered_not_whole(h, payload, ready);
	ofi_rx_inplace_request request{payload, h.len, next_rx_context()};
	return consume_(consume_arg_, &request) == 1 ? 1 : 0;
}

inline void *ShmEndpoint::next_rx_context()
{
	while (!rx_queue_.empty() && rx_queue_.front().canceled)
		rx_queue_.pop();
	return rx_queue_.empty() ? nullptr : rx_queue_.front().context;
}

uint32_t ShmEndpoint::offered_not_whole(const SlotHeader &h, const uint8_t *payload,
					uint32_t ready)
{
	if (!valid_slot(h))
		return 0; // (valid_slot passes a whole one only if consumed_in_place's test did)
	ofi_rx_inplace_request request{nullptr, h.total, next_rx_context(), nullptr, 0};
	iovec pieces[kSlots];
	uint32_t slots = 0;
	if (h.flags == kSlotFirst) {
		slots = message_pieces(h, payload, ready, pieces);
		if (slots) {
			request.pieces = pieces;
			request.piece_count = slots;
		}
	}
	int taken = consume_(consume_arg_, &request);
	return taken == 1 ? slots : 0;
}

uint32_t ShmEndpoint::message_pieces(const SlotHeader &h, const uint8_t *payload,
				     uint32_t ready, iovec *pieces) const
{
	// valid_slot checked the first: len == kSlotPayload < total <= kMaxMsgSize.
	size_t rest = h.total - h.len;
	size_t slots = 1 + (rest + kSlotPayload - 1) / kSlotPayload;
	if (slots > ready || slots > kSlots)
		return 0; // the rest is still coming: slot by slot, as before
	pieces[0] = {const_cast<uint8_t *>(payload), h.len};
	for (uint32_t i = 1; i < slots; i++) {
		const uint8_t *slot = rx_ring_.slot_ahead(i);
		SlotHeader c;
		memcpy(&c, slot, sizeof(c));
		if (c.status != 0 || !continues_message(c, kOpMsg, rest))
			return 0; // take_slot meets it in turn and fails the connection
		pieces[i] = {const_cast<uint8_t *>(slot + sizeof(c)), c.len};
		rest -= c.len;
	}
	return static_cast<uint32_t>(slots);
}

bool ShmEndpoint::valid_slot(const SlotHeader &h) const
{
	bool first = (h.flags & kSlotFirst) != 0;
	bool cq_data = (h.flags & kSlotCqData) != 0;
	if (h.op < kOpMsg || h.op > kOpAck || (h.flags & ~kSlotKnownFlags) ||
	    h.len > kSlotPayload || first == incoming_.active)
		return false;
	bool answer = h.op == kOpAck || h.op == kOpReadResp;
	if (answer ? !known_status(h.status) : h.status != 0)
		return false;
	if (!first)
		return continues_message(h, incoming_.op, incoming_.total - incoming_.received);
	bool rma_fields = h.op == kOpWrite || h.op == kOpReadReq;
	if (!rma_fields && (h.rma_key || h.rma_addr))
		return false;
	if (cq_data && h.op != kOpMsg && h.op != kOpWrite)
		return false;
	if (h.op == kOpMsg && h.id != 0)
		return false;
	if (h.total > kMaxMsgSize)
		return false;
	switch (h.op) {
	case kOpReadReq:
		return h.len == 0; // no payload: total is what is asked for
	case kOpAck:
		return h.len == 0 && h.total == 0;
	default:
		return h.len == std::min<uint64_t>(h.total, kSlotPayload);
	}
}

bool ShmEndpoint::take_slot(const SlotHeader &h, const uint8_t *payload)
{
	bool valid = valid_slot(h);
	bool first = (h.flags & kSlotFirst) != 0;
	Pending *answered = nullptr;
	if (valid && first && (h.op == kOpAck || h.op == kOpReadResp)) {
		answered = pending_for(h.id, h.op == kOpReadResp);
		// A read's data is exactly what was asked for; a refusal carries none.
		valid = answered && (h.op == kOpAck ||
				     h.total == (h.status == 0 ? answered->len : 0));
	}
	if (!valid) {
		FI_WARN(&provider, FI_LOG_EP_DATA,
			"peer %s wrote an invalid ring entry (op %u flags %#x len %u total %lu "
			"status %u)\n",
			peer_.text, h.op, h.flags, h.len, static_cast<unsigned long>(h.total),
			h.status);
		// Tell the peer too: it must not wait on a ring nobody reads.
		::shutdown(sock_, SHUT_RDWR);
		connection_lost(-FI_EIO);
		return false;
	}
	if (first) {
		incoming_ = Incoming{};
		incoming_.active = true;
		incoming_.op = h.op;
		incoming_.total = h.op == kOpReadReq ? 0 : h.total;
		incoming_.has_data = (h.flags & kSlotCqData) != 0;
		incoming_.data = h.cq_data;
		incoming_.id = h.id;
		incoming_.pending = answered;
	}
	switch (h.op) {
	case kOpMsg:
		place_message(payload, h.len);
		break;
	case kOpWrite:
		if (first)
			start_write(h);
		place_write(payload, h.len);
		break;
	case kOpReadReq:
		answer_read(h);
		break;
	case kOpReadResp:
		if (h.status && !incoming_.status)
			incoming_.status = h.status; // refused, possibly half-way
		place_read(payload, h.len);
		break;
	case kOpAck:
		incoming_.status = h.status;
		break;
	}
	incoming_.received += h.len;
	if (incoming_.received == incoming_.total)
		finish_incoming();
	return true;
}

void ShmEndpoint::place_message(const uint8_t *payload, size_t len)
{
	// Place what fits into the receive's buffers; the rest of a too long message is dropped.
	RxEntry &r = rx_queue_.front();
	size_t offset = incoming_.received;
	const uint8_t *src = payload;
	for (size_t i = 0; i < r.count && len; i++) {
		if (offset >= r.iov[i].iov_len) {
			offset -= r.iov[i].iov_len;
			continue;
		}
		size_t n = std::min(len, r.iov[i].iov_len - offset);
		memcpy(static_cast<uint8_t *>(r.iov[i].iov_base) + offset, src, n);
		src += n;
		len -= n;
		offset = 0;
	}
}

void ShmEndpoint::finish_incoming()
{
	// Over before the completion is written, without copying the state out: nothing
	// below reads a slot, and the next first slot resets the rest.
	incoming_.active = false;
	const Incoming &done = incoming_;
	switch (done.op) {
	case kOpMsg: {
		RxEntry &r = rx_queue_.front();
		uint64_t cq_flags = FI_RECV | FI_MSG | (done.has_data ? FI_REMOTE_CQ_DATA : 0);
		void *buf = r.count ? r.iov[0].iov_base : nullptr;
		if (done.total > r.capacity)
			fail_rx(r.context, cq_flags, FI_ETRUNC, FI_ETRUNC, r.capacity, buf,
				done.total - r.capacity, done.data);
		else
			complete_rx(r.flags, r.context, cq_flags, done.total, buf, done.data);
		rx_queue_.pop();
		break;
	}
	case kOpWrite:
		finish_write(done);
		break;
	case kOpReadResp:
	case kOpAck:
		complete_pending(*done.pending, done.status);
		break;
	case kOpReadReq:
		break; // answered when taken
	}
}

} // namespace shm
