// RxmCq: completion storage, formats, and progress on read.
#include "prov/rxm/rxm_cq.h"

#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_fabric.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <new>

namespace rxm {

RxmCq::RxmCq(RxmDomain *domain, enum fi_cq_format format, enum fi_wait_obj wait_obj,
	     void *context)
	: FidObject(embedded_fid, FI_CLASS_CQ, context), domain_(domain), format_(format),
	  wait_obj_(wait_obj)
{
	embedded_fid.pub.fid.ops = util::ops_ptr<RxmCq, util::make_fi_ops<RxmCq>>();
	embedded_fid.pub.ops = util::ops_ptr<RxmCq, util::make_cq_ops<RxmCq>>();
	domain_->ref();
}

int RxmCq::open(RxmDomain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context)
{
	if (!attr || !cq)
		return -FI_EINVAL;
	// The enums come from the application and may hold any value: read them as integers
	// and range-check before treating them as enumerators.
	static_assert(sizeof(fi_cq_format) == sizeof(unsigned) && sizeof(fi_wait_obj) == sizeof(unsigned) &&
		      sizeof(fi_cq_wait_cond) == sizeof(unsigned));
	unsigned raw_format, raw_wait_obj, raw_wait_cond;
	std::memcpy(&raw_format, &attr->format, sizeof raw_format);
	std::memcpy(&raw_wait_obj, &attr->wait_obj, sizeof raw_wait_obj);
	std::memcpy(&raw_wait_cond, &attr->wait_cond, sizeof raw_wait_cond);
	if (raw_format == FI_CQ_FORMAT_UNSPEC)
		raw_format = FI_CQ_FORMAT_CONTEXT;
	if (raw_format > FI_CQ_FORMAT_TAGGED)
		return -FI_ENOSYS;
	if (raw_wait_obj != FI_WAIT_NONE && raw_wait_obj != FI_WAIT_UNSPEC &&
	    raw_wait_obj != FI_WAIT_FD)
		return -FI_ENOSYS;
	if (raw_wait_cond != FI_CQ_COND_NONE && raw_wait_cond != FI_CQ_COND_THRESHOLD)
		return -FI_EINVAL;
	RxmCq *c = new (std::nothrow) RxmCq(domain, static_cast<fi_cq_format>(raw_format),
					    static_cast<fi_wait_obj>(raw_wait_obj), context);
	if (!c)
		return -FI_ENOMEM;
	if (!c->wait_ok()) {
		c->close();
		return -FI_ENOMEM;  // out of fds for the eventfd/epoll set
	}
	*cq = c->pub();
	return 0;
}

int RxmCq::close()
{
	if (busy())
		return -FI_EBUSY;
	domain_->unref();
	return FidObject::close();
}

void RxmCq::attach(RxmEndpoint *ep)
{
	add_bound_ep(ep);
	ref();
}

void RxmCq::detach(RxmEndpoint *ep)
{
	if (remove_bound_ep(ep))
		unref();
}

void RxmCq::progress()
{
	for_each_bound_ep([](RxmEndpoint *ep) { ep->progress(); });
}

void RxmCq::write(void *context, uint64_t flags, size_t len, void *buf, uint64_t data,
		  uint64_t tag, fi_addr_t source)
{
	std::lock_guard guard(lock_);
	entries_.push_back({{context, flags, len, buf, data, tag}, source});
	pending_.fetch_add(1, std::memory_order_release);
	note_event_added();
}

void RxmCq::write_error(void *context, uint64_t flags, int err, size_t len, size_t olen,
			uint64_t data, uint64_t tag, int prov_errno)
{
	fi_cq_err_entry e{};
	e.op_context = context;
	e.flags = flags;
	e.len = len;
	e.data = data;
	e.tag = tag;
	e.olen = olen;
	e.err = err;
	e.prov_errno = prov_errno;
	std::lock_guard guard(lock_);
	errors_.push_back(e);
	pending_.fetch_add(1, std::memory_order_release);
	note_event_added();
}

size_t RxmCq::entry_size() const
{
	switch (format_) {
	case FI_CQ_FORMAT_MSG:
		return sizeof(fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(fi_cq_tagged_entry);
	default:
		return sizeof(fi_cq_entry);
	}
}

ssize_t RxmCq::readfrom(void *buf, size_t count, fi_addr_t *src_addr)
{
	if (!buf && count)
		return -FI_EINVAL;
	// Entries already queued are handed out without progressing first: a reader taking
	// completions one at a time then pays the cores' system calls once per batch, not once
	// per entry. Progress runs again as soon as the queue cannot fill the request.
	if (pending_.load(std::memory_order_acquire) < std::max<size_t>(count, 1))
		progress();
	return take_entries(buf, count, src_addr);
}

ssize_t RxmCq::take_entries(void *buf, size_t count, fi_addr_t *src_addr)
{
	if (!buf && count)
		return -FI_EINVAL;
	std::lock_guard guard(lock_);
	if (!errors_.empty())
		return -FI_EAVAIL;
	if (entries_.empty())
		return -FI_EAGAIN;
	size_t n = std::min(count, entries_.size());
	size_t size = entry_size();
	uint8_t *out = static_cast<uint8_t *>(buf);
	for (size_t i = 0; i < n; i++) {
		// The formats are prefixes of the tagged entry.
		memcpy(out + i * size, &entries_.front().e, size);
		if (src_addr)
			src_addr[i] = entries_.front().source;
		entries_.pop_front();
	}
	pending_.fetch_sub(n, std::memory_order_release);
	if (entries_.empty())
		note_drained();
	return static_cast<ssize_t>(n);
}

ssize_t RxmCq::read(void *buf, size_t count) { return readfrom(buf, count, nullptr); }

ssize_t RxmCq::readerr(struct fi_cq_err_entry *buf, uint64_t flags)
{
	(void)flags;
	if (!buf)
		return -FI_EINVAL;
	progress();
	std::lock_guard guard(lock_);
	if (errors_.empty())
		return -FI_EAGAIN;
	fi_cq_err_entry e = errors_.front();
	errors_.pop_front();
	pending_.fetch_sub(1, std::memory_order_release);
	if (errors_.empty() && entries_.empty())
		note_drained();
	uint32_t version = domain_->api_version();
	if (FI_VERSION_LT(version, FI_VERSION(1, 5))) {
		// Applications of older APIs know the entry without err_data_size.
		memcpy(buf, &e, offsetof(fi_cq_err_entry, err_data_size));
	} else {
		// err_data/err_data_size are in/out: we carry no provider error data.
		buf->op_context = e.op_context;
		buf->flags = e.flags;
		buf->len = e.len;
		buf->buf = e.buf;
		buf->data = e.data;
		buf->tag = e.tag;
		buf->olen = e.olen;
		buf->err = e.err;
		buf->prov_errno = e.prov_errno;
		buf->err_data_size = 0;
	}
	return 1;
}

ssize_t RxmCq::sreadfrom(void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
			 int timeout)
{
	size_t threshold = 1;
	if (cond)
		threshold = std::max<size_t>(1, std::min(count, *static_cast<const size_t *>(cond)));
	bool infinite = timeout < 0;
	Clock::time_point deadline = deadline_after(timeout);
	for (;;) {
		if (take_interrupt())
			return -FI_EAGAIN;
		if (pending_.load(std::memory_order_acquire) < std::max(threshold, count))
			progress(); // else the queue already fills the request (see readfrom)
		{
			std::lock_guard guard(lock_);
			begin_wait();  // from here on, new completions set the eventfd
			size_t ready = errors_.empty() ? entries_.size() : threshold;
			if (ready >= threshold) {
				end_wait();
				break;
			}
			// Below the threshold: forget earlier wake-ups so we sleep until the next one.
			note_drained();
		}
		int rc = block_polled(deadline, infinite);
		end_wait();
		if (rc == -FI_EAGAIN) {
			if (take_interrupt())
				return -FI_EAGAIN;
			if (!infinite && Clock::now() >= deadline) {
				// Timed out: hand out whatever arrived, even below the threshold.
				return readfrom(buf, count, src_addr);
			}
			continue;
		}
		if (rc < 0)
			return rc;
	}
	return take_entries(buf, count, src_addr);
}

ssize_t RxmCq::sread(void *buf, size_t count, const void *cond, int timeout)
{
	return sreadfrom(buf, count, nullptr, cond, timeout);
}

int RxmCq::signal()
{
	interrupt();
	return 0;
}

int RxmCq::control(int command, void *arg)
{
	std::lock_guard guard(lock_);
	return rxm_wait_control(command, arg, wait_obj_);
}

int RxmCq::trywait_all()
{
	progress();
	if (has_events())
		return -FI_EAGAIN;
	int rc = cores_trywait(bound_eps());
	if (rc)
		return rc;
	return has_events() ? -FI_EAGAIN : 0;
}

const char *RxmCq::strerror(int prov_errno, const void *, char *buf, size_t len)
{
	const char *text = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		snprintf(buf, len, "%s", text);
		return buf;
	}
	return text;
}

bool RxmCq::cores_quiet()
{
	return cores_may_sleep(bound_eps());
}

} // namespace rxm
