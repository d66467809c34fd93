// ShmEndpoint: fi_send*/fi_recv*/fi_inject* argument checks and flag handling.
#include "prov/shm/shm_endpoint.h"
#include "prov/util/counter.h"

#include <algorithm>
#include <cstring>

namespace shm {
namespace {

constexpr uint64_t kTxMsgFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA |
	FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_FENCE | FI_MORE |
	FI_MSG | FI_SEND;
constexpr uint64_t kRxMsgFlags = FI_COMPLETION | FI_MORE | FI_MSG | FI_RECV;

} // namespace

bool valid_iov(const iovec *iov, size_t count, size_t *total)
{
	if (count > kIovLimit || (count && !iov))
		return false;
	size_t sum = 0;
	for (size_t i = 0; i < count; i++) {
		if (iov[i].iov_len && !iov[i].iov_base)
			return false;
		if (iov[i].iov_len > kMaxMsgSize - sum)
			return false;
		sum += iov[i].iov_len;
	}
	*total = sum;
	return true;
}

int ShmEndpoint::check_can_post() const
{
	return enabled() ? 0 : -FI_EOPBADSTATE;
}

int ShmEndpoint::check_inject_room()
{
	// Injected data must be in the ring before we return: it goes only into a free slot
	// with nothing queued before it (answers we owe the peer first), otherwise EAGAIN.
	if (state_ != State::connected)
		return -FI_EAGAIN;
	if (!push_tx())
		return -FI_ENOTCONN;
	if (!tx_queue_.empty() || !responses_.empty())
		return -FI_EAGAIN;
	uint32_t free_slots = 0;
	if (!tx_ring_.free_slots(&free_slots)) {
		connection_lost(-FI_EIO);
		return -FI_ENOTCONN;
	}
	return free_slots ? 0 : -FI_EAGAIN;
}

ssize_t ShmEndpoint::post_send(const iovec *iov, size_t count, void *context, uint64_t flags,
			       uint64_t data)
{
	size_t total = 0;
	if (!valid_iov(iov, count, &total))
		return -FI_EINVAL;
	bool inject = (flags & FI_INJECT) != 0;
	if (inject && total > kSlotPayload)
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	int ret = check_can_post();
	if (ret)
		return ret;
	if (state_ != State::connected && state_ != State::connecting)
		return -FI_ENOTCONN;
	if (send_in_slots(iov, count, total, context, flags, data))
		return 0;
	if (inject && (ret = check_inject_room()) != 0)
		return ret;
	if (tx_queue_.full())
		return -FI_EAGAIN;
	TxEntry e;
	memcpy(e.iov, iov, count * sizeof(iovec));
	e.count = count;
	e.total = total;
	e.context = context;
	e.flags = flags;
	e.has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
	e.data = data;
	tx_queue_.push(e);
	if (state_ == State::connected)
		push_tx();
	return 0;
}

bool ShmEndpoint::send_in_slots(const iovec *iov, size_t count, size_t total, void *context,
				uint64_t flags, uint64_t data)
{
	// The common message: nothing queued before it (answers we owe go first), room in the
	// ring for all its slots. Written straight from the caller's iovecs: no TxEntry, no
	// queue, one publish (the receiver sees it whole: rxm takes it in place, in pieces).
	uint32_t slots = total <= kSlotPayload ? 1 : 0;
	if (!slots && total <= kSlots * kSlotPayload)
		slots = static_cast<uint32_t>((total + kSlotPayload - 1) / kSlotPayload);
	if (state_ != State::connected || !slots || !tx_queue_.empty() || !responses_.empty() ||
	    !tx_ring_.has_free_slots(slots))
		return false; // (a corrupt tail is reported on the general path)
	bool has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
	SlotHeader h{};
	h.op = kOpMsg;
	h.flags = kSlotFirst | (has_data ? kSlotCqData : 0);
	h.cq_data = has_data ? data : 0;
	if (slots == 1) {
		h.len = static_cast<uint32_t>(total);
		h.total = total;
		uint8_t *slot = tx_ring_.slot(0);
		if (count == 1 && total) // (a NULL base is allowed for 0 bytes, not for memcpy)
			memcpy(slot + sizeof(h), iov[0].iov_base, total);
		else
			gather(iov, count, 0, slot + sizeof(h), total);
		write_slot_fields(slot, h); // last: see inject_framed
	} else {
		// (gather's memcpy, not one GCC would inline here as `rep movsq`)
		// The first slot's header last of all, as the one slot's above: a consumer
		// polls the first slot only.
		SlotHeader first = h;
		first.len = static_cast<uint32_t>(kSlotPayload);
		first.total = total;
		h.flags = 0; // continuations: what is left (as fill_slot writes)
		h.cq_data = 0;
		size_t sent = 0;
		for (uint32_t i = 0; i < slots; i++) {
			size_t len = std::min(total - sent, kSlotPayload);
			uint8_t *slot = tx_ring_.slot(i);
			gather(iov, count, sent, slot + sizeof(h), len);
			if (i > 0) {
				h.len = static_cast<uint32_t>(len);
				h.total = total - sent;
				write_slot_fields(slot, h);
			}
			sent += len;
		}
		write_slot_fields(tx_ring_.slot(0), first);
	}
	if (tx_ring_.publish(slots))
		ring_doorbell(peer_bell_);
	finish_msg_send(flags, context, total);
	return true;
}

ssize_t ShmEndpoint::inject_framed(const void *hdr, size_t hdr_len, const iovec *payload,
				   size_t count, size_t payload_len)
{
	// The caller (a utility provider in this process) checked the payload iovecs as it
	// checks the application's; the sizes are checked here, the slot is our own ring's.
	if (!hdr || count > kIovLimit || (count && !payload))
		return -FI_EINVAL;
	if (hdr_len > kSlotPayload || payload_len > kSlotPayload - hdr_len)
		return inject_framed_slots(hdr, hdr_len, payload, count, payload_len);
	util::LockGuard guard(domain().lock());
	// What send_in_slots asks of a message written at once, for one slot (anything else,
	// including a corrupt tail, is the plain path's to queue or report).
	if (!enabled() || state_ != State::connected || !tx_queue_.empty() ||
	    !responses_.empty() || !tx_ring_.has_free_slots(1))
		return -FI_EAGAIN;
	size_t total = hdr_len + payload_len;
	SlotHeader h{};
	h.op = kOpMsg;
	h.flags = kSlotFirst;
	h.len = static_cast<uint32_t>(total);
	h.total = total;
	uint8_t *slot = tx_ring_.slot(0);
	memcpy(slot + sizeof(h), hdr, hdr_len);
	uint8_t *out = slot + sizeof(h) + hdr_len;
	if (count == 1 && payload_len) // (a NULL base is allowed for 0 bytes, not for memcpy)
		memcpy(out, payload[0].iov_base, payload_len);
	else
		gather(payload, count, 0, out, payload_len);
	// The header's line last, right before publish stores its seq: a consumer polling
	// this slot reads that line, and each time it does between our two writes to it the
	// second one has to take the line back (a 1 KiB copy in between made that likely).
	write_slot_fields(slot, h);
	if (tx_ring_.publish(1))
		ring_doorbell(peer_bell_);
	// As fi_inject's: no CQ entry, a bound send counter counts it (count_tx's step, inline:
	// a call per message for a counter rxm never binds).
	if (util::Counter *sends = counter(kSendCntr))
		sends->increment();
	return 0;
}

ssize_t ShmEndpoint::inject_framed_slots(const void *hdr, size_t hdr_len, const iovec *payload,
					 size_t count, size_t payload_len)
{
	// More than a slot: the header is the message's first piece, and send_in_slots writes
	// it all at once or nothing (a message longer than the ring never goes at once).
	constexpr size_t kRing = kSlots * kSlotPayload;
	if (hdr_len > kRing || payload_len > kRing - hdr_len)
		return -FI_EAGAIN;
	iovec all[kIovLimit + 1];
	all[0] = {const_cast<void *>(hdr), hdr_len};
	if (count) // (payload may be NULL for none)
		memcpy(all + 1, payload, count * sizeof(iovec));
	util::LockGuard guard(domain().lock());
	if (!enabled())
		return -FI_EAGAIN;
	return send_in_slots(all, count + 1, hdr_len + payload_len, nullptr,
			     FI_INJECT | kNoCqEntry, 0)
		       ? 0
		       : -FI_EAGAIN;
}

ssize_t ShmEndpoint::post_recv(const iovec *iov, size_t count, void *context, uint64_t flags)
{
	size_t total = 0;
	if (!valid_iov(iov, count, &total))
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	int ret = check_can_post();
	if (ret)
		return ret;
	if (state_ == State::closed)
		return -FI_ENOTCONN;
	if (rx_queue_.full())
		return -FI_EAGAIN;
	RxEntry r;
	memcpy(r.iov, iov, count * sizeof(iovec));
	r.count = count;
	r.capacity = total;
	r.context = context;
	r.flags = flags;
	rx_queue_.push(r);
	// A message may be waiting in the ring for exactly this receive.
	if (state_ == State::connected && drain_rx())
		push_tx();
	return 0;
}

ssize_t ShmEndpoint::recv(void *buf, size_t len, void *, fi_addr_t, void *context)
{
	iovec iov{buf, len};
	return post_recv(&iov, 1, context, rx_op_flags());
}

ssize_t ShmEndpoint::recvv(const struct iovec *iov, void **, size_t count, fi_addr_t,
			   void *context)
{
	return post_recv(iov, count, context, rx_op_flags());
}

ssize_t ShmEndpoint::recvmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kRxMsgFlags)
		return -FI_EBADFLAGS;
	return post_recv(msg->msg_iov, msg->iov_count, msg->context, flags);
}

ssize_t ShmEndpoint::send(const void *buf, size_t len, void *, fi_addr_t, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return post_send(&iov, 1, context, tx_op_flags(), 0);
}

ssize_t ShmEndpoint::sendv(const struct iovec *iov, void **, size_t count, fi_addr_t,
			   void *context)
{
	return post_send(iov, count, context, tx_op_flags(), 0);
}

ssize_t ShmEndpoint::sendmsg(const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kTxMsgFlags)
		return -FI_EBADFLAGS;
	return post_send(msg->msg_iov, msg->iov_count, msg->context, flags, msg->data);
}

ssize_t ShmEndpoint::inject(const void *buf, size_t len, fi_addr_t)
{
	iovec iov{const_cast<void *>(buf), len};
	return post_send(&iov, 1, nullptr, FI_INJECT | kNoCqEntry, 0);
}

ssize_t ShmEndpoint::senddata(const void *buf, size_t len, void *, uint64_t data, fi_addr_t,
			      void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	return post_send(&iov, 1, context, tx_op_flags() | FI_REMOTE_CQ_DATA, data);
}

ssize_t ShmEndpoint::injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t)
{
	iovec iov{const_cast<void *>(buf), len};
	return post_send(&iov, 1, nullptr, FI_INJECT | FI_REMOTE_CQ_DATA | kNoCqEntry, data);
}

} // namespace shm
