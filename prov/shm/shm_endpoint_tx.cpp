// ShmEndpoint: moving queued operations and the answers we owe the peer into the transmit
// ring. A send completes once its last byte is in the ring: the buffer is then free, and the
// peer reads from the ring, not from us. An RMA request waits for the target's answer
// (shm_endpoint_rma.cpp). A read response is copied from the registered region slot by slot,
// each time after checking that the region is still registered.
#include "prov/shm/shm_endpoint.h"

#include <algorithm>
#include <cstring>

namespace shm {
namespace {

uint32_t wire_op(uint8_t kind)
{
	static constexpr uint32_t ops[] = {kOpMsg, kOpWrite, kOpReadReq, kOpReadResp, kOpAck};
	return ops[kind];
}

} // namespace

void ShmEndpoint::gather(const iovec *iov, size_t count, size_t offset, uint8_t *dst,
			 size_t len)
{
	for (size_t i = 0; i < count && len; i++) {
		if (offset >= iov[i].iov_len) {
			offset -= iov[i].iov_len;
			continue;
		}
		size_t n = std::min(len, iov[i].iov_len - offset);
		memcpy(dst, static_cast<const uint8_t *>(iov[i].iov_base) + offset, n);
		dst += n;
		len -= n;
		offset = 0;
	}
}

ShmEndpoint::TxEntry *ShmEndpoint::next_tx()
{
	// Slots of one operation are consecutive in the ring: a started entry finishes first.
	if (!responses_.empty() && responses_.front().started)
		return &responses_.front();
	if (!tx_queue_.empty() && tx_queue_.front().started)
		return &tx_queue_.front();
	// Answers go before new operations of ours: the peer is waiting for them.
	if (!responses_.empty())
		return &responses_.front();
	if (!tx_queue_.empty())
		return &tx_queue_.front();
	return nullptr;
}

void ShmEndpoint::fill_slot(TxEntry &e, uint8_t *slot)
{
	bool first = !e.started;
	if (e.kind == TxKind::read_response && e.status == 0 &&
	    !shm_domain().mr_map().alive(e.rma_key, e.serial)) {
		// fi_close(mr) ended the region since we checked it (it takes the domain lock,
		// as we hold it now): the rest is refused, nothing more is read from it.
		FI_INFO(&provider, FI_LOG_EP_DATA,
			"region closed during a remote read: the rest is refused\n");
		e.status = FI_EINVAL;
		if (first)
			e.total = 0;
	}
	size_t len = std::min(e.total - e.sent, kSlotPayload);
	SlotHeader h{};
	h.op = wire_op(static_cast<uint8_t>(e.kind));
	h.len = static_cast<uint32_t>(len);
	if (e.kind == TxKind::ack || e.kind == TxKind::read_response)
		h.status = e.status;
	if (first) {
		h.flags = kSlotFirst | (e.has_data ? kSlotCqData : 0);
		h.total = e.kind == TxKind::read_request ? e.rma_len : e.total;
		h.cq_data = e.has_data ? e.data : 0;
		h.id = e.id;
		if (e.kind == TxKind::write || e.kind == TxKind::read_request) {
			h.rma_key = e.rma_key;
			h.rma_addr = e.rma_addr;
		}
	} else {
		h.total = e.total - e.sent;
	}
	if (e.kind == TxKind::read_response && e.status != 0)
		memset(slot + sizeof(h), 0, len); // refused half-way: the length is promised
	else
		gather(e.iov, e.count, e.sent, slot + sizeof(h), len);
	write_slot_fields(slot, h); // last (see ShmEndpoint::inject_framed)
	e.sent += len;
	e.started = true;
}

void ShmEndpoint::finish_msg_send(uint64_t flags, void *context, size_t total)
{
	if (flags & kNoCqEntry)
		count_tx(FI_SEND | FI_MSG);
	else
		complete_tx(flags, context, FI_SEND | FI_MSG, total);
}

void ShmEndpoint::finish_tx(TxEntry &e)
{
	switch (e.kind) {
	case TxKind::msg:
		finish_msg_send(e.flags, e.context, e.total);
		break;
	case TxKind::write:
	case TxKind::read_request:
		// Completes when the target answers: from now on an answer may name it.
		pending_[e.id & 0xffffffffu].sent = true;
		break;
	case TxKind::read_response:
		if (e.status == 0)
			count_remote(FI_REMOTE_READ);
		break;
	case TxKind::ack:
		break;
	}
}

bool ShmEndpoint::push_tx()
{
	while (TxEntry *e = next_tx()) {
		uint32_t free_slots = 0;
		if (!tx_ring_.free_slots(&free_slots)) {
			FI_WARN(&provider, FI_LOG_EP_DATA, "peer %s corrupted its ring tail\n",
				peer_.text);
			connection_lost(-FI_EIO);
			return false;
		}
		if (free_slots == 0)
			return true; // before_sleep() asks the consumer for a doorbell
		uint32_t used = 0;
		do {
			fill_slot(*e, tx_ring_.slot(used));
			used++;
		} while (e->sent < e->total && used < free_slots);
		if (tx_ring_.publish(used))
			ring_doorbell(peer_bell_);
		if (e->sent < e->total)
			continue; // ring full: the next round waits for space
		bool answer = !responses_.empty() && e == &responses_.front();
		finish_tx(*e);
		if (answer)
			responses_.pop();
		else
			tx_queue_.pop();
	}
	return true;
}

} // namespace shm
