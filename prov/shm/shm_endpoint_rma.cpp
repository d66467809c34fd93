// ShmEndpoint: the initiator side of RMA. fi_read*/fi_write*/fi_inject_write* argument checks,
// the pending table, and completing an operation when the target's answer arrives.
//
// Completion: a write completes when the target's ack arrives, i.e. after the data was placed
// in the target region (FI_DELIVERY_COMPLETE, which covers FI_TRANSMIT_COMPLETE and
// FI_INJECT_COMPLETE too). The ack is needed anyway: it carries the verdict on key, range and
// access, which the initiator must report (as tcp does). A read completes when its last byte
// is in our buffer.
#include "prov/shm/shm_endpoint.h"

#include <algorithm>
#include <cstring>

namespace shm {
namespace {

constexpr uint64_t kRmaFlags = FI_COMPLETION | FI_INJECT | FI_REMOTE_CQ_DATA |
	FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | FI_FENCE | FI_MORE |
	FI_RMA | FI_READ | FI_WRITE;

size_t iov_total(const iovec *iov, size_t count)
{
	size_t total = 0;
	for (size_t i = 0; iov && i < count; i++)
		total += iov[i].iov_len;
	return total;
}

uint64_t cq_flags_of(bool is_read)
{
	return FI_RMA | (is_read ? FI_READ : FI_WRITE);
}

} // namespace

ssize_t ShmEndpoint::post_rma(TxKind kind, const iovec *iov, size_t count,
			      const fi_rma_iov *rma, size_t rma_count, void *context,
			      uint64_t flags, uint64_t data)
{
	size_t total = 0;
	if (!rma || rma_count != kRmaIovLimit || !valid_iov(iov, count, &total) ||
	    total != rma->len)
		return -FI_EINVAL;
	bool is_read = kind == TxKind::read_request;
	bool inject = !is_read && (flags & FI_INJECT);
	if (inject && total > kSlotPayload)
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	int ret = check_can_post();
	if (ret)
		return ret;
	if (state_ != State::connected && state_ != State::connecting)
		return -FI_ENOTCONN;
	if (inject && (ret = check_inject_room()) != 0)
		return ret;
	if (tx_queue_.full() || free_pending_.empty())
		return -FI_EAGAIN;
	uint32_t index = free_pending_.back();
	free_pending_.pop_back();
	Pending &p = pending_[index];
	p.busy = true;
	p.sent = false;
	p.is_read = is_read;
	p.context = context;
	p.flags = flags;
	p.len = total;
	p.count = is_read ? count : 0;
	if (is_read)
		memcpy(p.iov, iov, count * sizeof(iovec));
	TxEntry e;
	e.kind = kind;
	e.id = (uint64_t(p.generation) << 32) | index;
	e.rma_key = rma->key;
	e.rma_addr = rma->addr;
	e.context = context;
	e.flags = flags;
	if (is_read) {
		e.rma_len = total; // the request carries no payload
	} else {
		memcpy(e.iov, iov, count * sizeof(iovec));
		e.count = count;
		e.total = total;
		e.has_data = (flags & FI_REMOTE_CQ_DATA) != 0;
		e.data = data;
	}
	tx_queue_.push(e);
	if (state_ == State::connected)
		push_tx();
	return 0;
}

ShmEndpoint::Pending *ShmEndpoint::pending_for(uint64_t id, bool is_read)
{
	uint64_t index = id & 0xffffffffu;
	if (index >= pending_.size())
		return nullptr;
	Pending &p = pending_[index];
	if (!p.busy || !p.sent || p.is_read != is_read || p.generation != (id >> 32))
		return nullptr;
	return &p;
}

void ShmEndpoint::place_read(const uint8_t *payload, size_t len)
{
	Pending &p = *incoming_.pending;
	size_t offset = incoming_.received;
	for (size_t i = 0; i < p.count && len; i++) {
		if (offset >= p.iov[i].iov_len) {
			offset -= p.iov[i].iov_len;
			continue;
		}
		size_t n = std::min(len, p.iov[i].iov_len - offset);
		memcpy(static_cast<uint8_t *>(p.iov[i].iov_base) + offset, payload, n);
		payload += n;
		len -= n;
		offset = 0;
	}
}

void ShmEndpoint::complete_pending(Pending &p, uint32_t status)
{
	void *context = p.context;
	uint64_t flags = p.flags;
	size_t len = p.len;
	uint64_t cq_flags = cq_flags_of(p.is_read);
	p.busy = false;
	p.generation++;
	free_pending_.push_back(static_cast<uint32_t>(&p - pending_.data()));
	int err = static_cast<int>(status);
	if (err)
		fail_tx(context, cq_flags, err, err, 0);
	else if (flags & kNoCqEntry)
		count_tx(cq_flags);
	else
		complete_tx(flags, context, cq_flags, len);
}

ssize_t ShmEndpoint::read(void *buf, size_t len, void *, fi_addr_t, uint64_t addr,
			  uint64_t key, void *context)
{
	iovec iov{buf, len};
	fi_rma_iov rma{addr, len, key};
	return post_rma(TxKind::read_request, &iov, 1, &rma, 1, context, tx_op_flags(), 0);
}

ssize_t ShmEndpoint::readv(const struct iovec *iov, void **, size_t count, fi_addr_t,
			   uint64_t addr, uint64_t key, void *context)
{
	fi_rma_iov rma{addr, iov_total(iov, std::min(count, kIovLimit)), key};
	return post_rma(TxKind::read_request, iov, count, &rma, 1, context, tx_op_flags(), 0);
}

ssize_t ShmEndpoint::readmsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kRmaFlags)
		return -FI_EBADFLAGS;
	return post_rma(TxKind::read_request, msg->msg_iov, msg->iov_count, msg->rma_iov,
			msg->rma_iov_count, msg->context, flags & ~(FI_INJECT | FI_REMOTE_CQ_DATA),
			0);
}

ssize_t ShmEndpoint::write(const void *buf, size_t len, void *, fi_addr_t, uint64_t addr,
			   uint64_t key, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	return post_rma(TxKind::write, &iov, 1, &rma, 1, context, tx_op_flags(), 0);
}

ssize_t ShmEndpoint::writev(const struct iovec *iov, void **, size_t count, fi_addr_t,
			    uint64_t addr, uint64_t key, void *context)
{
	fi_rma_iov rma{addr, iov_total(iov, std::min(count, kIovLimit)), key};
	return post_rma(TxKind::write, iov, count, &rma, 1, context, tx_op_flags(), 0);
}

ssize_t ShmEndpoint::writemsg(const struct fi_msg_rma *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~kRmaFlags)
		return -FI_EBADFLAGS;
	return post_rma(TxKind::write, msg->msg_iov, msg->iov_count, msg->rma_iov,
			msg->rma_iov_count, msg->context, flags, msg->data);
}

ssize_t ShmEndpoint::inject_write(const void *buf, size_t len, fi_addr_t, uint64_t addr,
				  uint64_t key)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	return post_rma(TxKind::write, &iov, 1, &rma, 1, nullptr, FI_INJECT | kNoCqEntry, 0);
}

ssize_t ShmEndpoint::writedata(const void *buf, size_t len, void *, uint64_t data, fi_addr_t,
			       uint64_t addr, uint64_t key, void *context)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	return post_rma(TxKind::write, &iov, 1, &rma, 1, context,
			tx_op_flags() | FI_REMOTE_CQ_DATA, data);
}

ssize_t ShmEndpoint::inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t,
				      uint64_t addr, uint64_t key)
{
	iovec iov{const_cast<void *>(buf), len};
	fi_rma_iov rma{addr, len, key};
	return post_rma(TxKind::write, &iov, 1, &rma, 1, nullptr,
			FI_INJECT | FI_REMOTE_CQ_DATA | kNoCqEntry, data);
}

} // namespace shm
