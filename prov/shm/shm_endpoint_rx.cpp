// ShmEndpoint: taking messages out of the receive ring. Every slot header is the peer's
// claim: it is copied out once, then checked (op, flags, lengths consistent with the message
// being received) before a byte of payload is placed; any violation fails the connection.
#include "prov/shm/shm_endpoint.h"

#include <algorithm>
#include <cstring>

namespace shm {

bool ShmEndpoint::drain_rx()
{
	for (;;) {
		uint32_t ready = 0;
		if (!rx_ring_.ready_slots(&ready)) {
			connection_lost(-FI_EIO);
			return false;
		}
		if (ready == 0) {
			if (rx_ring_.arm())
				continue;
			return true;
		}
		for (uint32_t i = 0; i < ready; i++) {
			// A new message needs a receive; without one it waits in the ring (the
			// sender sees no room once the ring fills) until fi_recv drains again.
			if (!incoming_.active) {
				while (!rx_queue_.empty() && rx_queue_.front().canceled)
					rx_queue_.pop();
				if (rx_queue_.empty())
					return true;
			}
			const uint8_t *slot = rx_ring_.slot();
			SlotHeader header;
			memcpy(&header, slot, sizeof(header));
			if (!take_slot(header, slot + sizeof(header)))
				return false;
			if (rx_ring_.release())
				ring_doorbell(peer_bell_);
		}
	}
}

bool ShmEndpoint::take_slot(const SlotHeader &h, const uint8_t *payload)
{
	bool first = (h.flags & kSlotFirst) != 0;
	size_t remaining = 0;
	bool valid = h.op == kOpMsg && !(h.flags & ~kSlotKnownFlags) && h.reserved == 0 &&
		     h.len <= kSlotPayload && first != incoming_.active;
	if (valid && first) {
		valid = h.total <= kMaxMsgSize && h.len == std::min<uint64_t>(h.total, kSlotPayload);
		remaining = h.total;
	} else if (valid) {
		remaining = incoming_.total - incoming_.received;
		valid = !(h.flags & kSlotCqData) && h.total == remaining &&
			h.len == std::min<size_t>(remaining, kSlotPayload);
	}
	if (!valid) {
		FI_WARN(&provider, FI_LOG_EP_DATA,
			"peer %s wrote an invalid ring entry (op %u flags %#x len %u total %lu)\n",
			peer_.text, h.op, h.flags, h.len, static_cast<unsigned long>(h.total));
		// Tell the peer too: it must not wait on a ring nobody reads.
		::shutdown(sock_, SHUT_RDWR);
		connection_lost(-FI_EIO);
		return false;
	}
	if (first) {
		incoming_.active = true;
		incoming_.total = h.total;
		incoming_.received = 0;
		incoming_.has_data = (h.flags & kSlotCqData) != 0;
		incoming_.data = h.cq_data;
	}
	// Place what fits into the receive's buffers; the rest of a too long message is dropped.
	RxEntry &r = rx_queue_.front();
	size_t offset = incoming_.received;
	size_t left = h.len;
	const uint8_t *src = payload;
	for (size_t i = 0; i < r.count && left; i++) {
		if (offset >= r.iov[i].iov_len) {
			offset -= r.iov[i].iov_len;
			continue;
		}
		size_t n = std::min(left, r.iov[i].iov_len - offset);
		memcpy(static_cast<uint8_t *>(r.iov[i].iov_base) + offset, src, n);
		src += n;
		left -= n;
		offset = 0;
	}
	incoming_.received += h.len;
	if (incoming_.received == incoming_.total)
		finish_incoming();
	return true;
}

void ShmEndpoint::finish_incoming()
{
	RxEntry &r = rx_queue_.front();
	uint64_t cq_flags = FI_RECV | FI_MSG | (incoming_.has_data ? FI_REMOTE_CQ_DATA : 0);
	void *buf = r.count ? r.iov[0].iov_base : nullptr;
	if (incoming_.total > r.capacity)
		fail_rx(r.context, cq_flags, FI_ETRUNC, FI_ETRUNC, r.capacity, buf,
			incoming_.total - r.capacity, incoming_.data);
	else
		complete_rx(r.flags, r.context, cq_flags, incoming_.total, buf, incoming_.data);
	rx_queue_.pop();
	incoming_ = Incoming{};
}

} // namespace shm
