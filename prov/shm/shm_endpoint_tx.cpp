// ShmEndpoint: moving queued sends into the transmit ring. A send completes once its last
// byte is in the ring: the buffer is then free, and the peer reads from the ring, not from us.
#include "prov/shm/shm_endpoint.h"

#include <algorithm>
#include <cstring>

namespace shm {

void ShmEndpoint::gather(TxEntry &e, uint8_t *dst, size_t len)
{
	size_t offset = e.sent;
	for (size_t i = 0; i < e.count && len; i++) {
		if (offset >= e.iov[i].iov_len) {
			offset -= e.iov[i].iov_len;
			continue;
		}
		size_t n = std::min(len, e.iov[i].iov_len - offset);
		memcpy(dst, static_cast<const uint8_t *>(e.iov[i].iov_base) + offset, n);
		dst += n;
		len -= n;
		offset = 0;
	}
}

bool ShmEndpoint::push_tx()
{
	while (!tx_queue_.empty()) {
		uint32_t free_slots = 0;
		if (!tx_ring_.free_slots(&free_slots)) {
			FI_WARN(&provider, FI_LOG_EP_DATA, "peer %s corrupted its ring tail\n",
				peer_.text);
			connection_lost(-FI_EIO);
			return false;
		}
		if (free_slots == 0) {
			if (tx_ring_.wait_for_space())
				continue;
			return true;
		}
		TxEntry &e = tx_queue_.front();
		uint32_t used = 0;
		do {
			uint8_t *slot = tx_ring_.slot(used);
			bool first = !e.started;
			size_t len = std::min(e.total - e.sent, kSlotPayload);
			SlotHeader h{};
			h.op = kOpMsg;
			h.flags = (first ? kSlotFirst : 0) | (first && e.has_data ? kSlotCqData : 0);
			h.len = static_cast<uint32_t>(len);
			h.total = first ? e.total : e.total - e.sent;
			h.cq_data = first ? e.data : 0;
			memcpy(slot, &h, sizeof(h));
			gather(e, slot + sizeof(h), len);
			e.sent += len;
			e.started = true;
			used++;
		} while (e.sent < e.total && used < free_slots);
		if (tx_ring_.publish(used))
			ring_doorbell(peer_bell_);
		if (e.sent < e.total)
			continue; // ring full: the next round waits for space
		if (e.flags & kNoCqEntry)
			count_tx(FI_SEND | FI_MSG);
		else
			complete_tx(e.flags, e.context, FI_SEND | FI_MSG, e.total);
		tx_queue_.pop();
	}
	return true;
}

} // namespace shm
