#include "prov/util/completion_queue.h"

#include "prov/util/cq_progress_ops.h"
#include "prov/util/error.h"
#include "prov/util/info_util.h"
#include "prov/util/wait_set.h"

#include <rdma/providers/fi_log.h>

#include <algorithm>
#include <cstring>

namespace util {

namespace {

size_t entry_size_of(enum fi_cq_format format)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		throw Error(-FI_ENOSYS);
	}
}

enum fi_cq_format chosen_format(const struct fi_cq_attr *attr)
{
	// FI_CQ_FORMAT_UNSPEC lets the provider choose; the context format is the smallest.
	unsigned format = raw_enum(attr->format);
	if (format == FI_CQ_FORMAT_UNSPEC)
		return FI_CQ_FORMAT_CONTEXT;
	if (format > FI_CQ_FORMAT_TAGGED)
		throw Error(-FI_ENOSYS);
	return static_cast<enum fi_cq_format>(format);
}

enum fi_wait_obj checked_wait_obj(const struct fi_cq_attr *attr)
{
	switch (raw_enum(attr->wait_obj)) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD:  // blocking reads sleep in epoll instead of yielding: same contract
		return attr->wait_obj;
	case FI_WAIT_SET:
		if (!attr->wait_set)
			throw Error(-FI_EINVAL);
		return attr->wait_obj;
	default:
		throw Error(-FI_ENOSYS);  // mutex/cond and pollfd are not offered
	}
}

// cq_progress_ops.h: the CQ behind a fid, when it is a util CQ read the util way. Every
// FI_CLASS_CQ object of prov/util is a CompletionQueue (its constructor alone sets that
// class), so after the header check the class makes the cast safe; the table check keeps
// out CQs whose read is their own (rxm's, verbs'), for which "queued" may mean otherwise.
CompletionQueue *plain_cq(struct fid_cq *cq) noexcept
{
	FidHeader *header = fid_header(cq ? &cq->fid : nullptr);
	if (!header || cq->fid.fclass != FI_CLASS_CQ ||
	    cq->ops != ops_ptr<CompletionQueue, make_cq_ops<CompletionQueue>>())
		return nullptr;
	return static_cast<CompletionQueue *>(header->owner);
}

int progress_op(struct fid_cq *cq) noexcept
{
	try {
		CompletionQueue *q = plain_cq(cq);
		if (!q)
			return -FI_EINVAL;
		return q->progress_then_ready(1) ? 1 : 0;
	} catch (...) {
		return 1; // let a read find out (and report) what went wrong
	}
}

struct ofi_cq_progress_ops progress_ops = {
	sizeof(struct ofi_cq_progress_ops),
	progress_op,
};

} // namespace

CompletionQueue::CompletionQueue(Domain &domain, const struct fi_cq_attr *attr, void *context)
    : FidObject(embedded_fid, FI_CLASS_CQ, context), domain_(domain),
      format_(chosen_format(attr)), wait_obj_(checked_wait_obj(attr)),
      entry_size_(entry_size_of(format_)), lock_(domain.lock_kind()),
      ring_(attr->size ? attr->size : kDefaultSize)
{
	if (attr->flags & ~(FI_AFFINITY))
		throw Error(-FI_EBADFLAGS);
	if (raw_enum(attr->wait_cond) != FI_CQ_COND_NONE &&
	    raw_enum(attr->wait_cond) != FI_CQ_COND_THRESHOLD)
		throw Error(-FI_EINVAL);
	if (wait_obj_ != FI_WAIT_NONE) {
		if (!wait_ok())
			throw Error(-FI_ENOMEM);
		check(add_wait_source(domain_.engine()));
	}
	if (wait_obj_ == FI_WAIT_SET) {
		wait_set_ = attr->wait_set;
		auto *set = fid_cast<WaitSet>(&wait_set_->fid, FI_CLASS_WAIT);
		if (!set)
			throw Error(-FI_EINVAL);
		check(set->add(this));
	}
	install_ops<CompletionQueue>();
	domain_.ref();
}

CompletionQueue::~CompletionQueue()
{
	if (wait_set_) {
		if (auto *set = fid_cast<WaitSet>(&wait_set_->fid, FI_CLASS_WAIT))
			set->remove(this);
	}
	domain_.unref();
}

int CompletionQueue::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

// ---- provider side ----

void CompletionQueue::push(Record &&record)
{
	LockGuard guard(lock_);
	if (overflow_.empty() && ring_.push(std::move(record))) {
		publish_count();
		note_event_added();
		return;
	}
	// Never drop a completion: keep it in order behind the ring.
	if (overruns_++ == 0)
		FI_WARN(domain_.fabric().provider(), FI_LOG_CQ,
			"CQ of size %zu overrun; keeping extra completions in an overflow list\n",
			ring_.capacity());
	overflow_.push_back(std::move(record));
	publish_count();
	note_event_added();
}

void CompletionQueue::write(void *context, uint64_t flags, size_t len, void *buf,
			    uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	// Written in place in the ring (every completion of the data path comes here): a
	// Record built and moved in twice cost about a third of a write.
	LockGuard guard(lock_);
	if (Record *slot = overflow_.empty() ? ring_.back_slot() : nullptr) {
		slot->op_context = context;
		slot->flags = flags;
		slot->len = len;
		slot->buf = buf;
		slot->data = data;
		slot->tag = tag;
		slot->src_addr = src_addr;
		slot->error.reset(); // what an earlier error entry in this slot left
		ring_.commit_back();
		publish_count();
		note_event_added();
		return;
	}
	Record record;
	record.op_context = context;
	record.flags = flags;
	record.len = len;
	record.buf = buf;
	record.data = data;
	record.tag = tag;
	record.src_addr = src_addr;
	push(std::move(record)); // behind the overflow; the lock is recursive
}

void CompletionQueue::write_error(const struct fi_cq_err_entry &error, fi_addr_t src_addr)
{
	Record record;
	record.op_context = error.op_context;
	record.flags = error.flags;
	record.len = error.len;
	record.buf = error.buf;
	record.data = error.data;
	record.tag = error.tag;
	record.src_addr = src_addr;
	record.error = std::make_unique<Record::ErrorDetail>();
	record.error->entry = error;
	if (record.error->entry.err < 0)
		record.error->entry.err = -record.error->entry.err;
	if (error.err_data && error.err_data_size) {
		auto *bytes = static_cast<const uint8_t *>(error.err_data);
		record.error->err_data.assign(bytes, bytes + error.err_data_size);
	}
	push(std::move(record));
}

size_t CompletionQueue::space()
{
	LockGuard guard(lock_);
	return overflow_.empty() ? ring_.space() : 0;
}

// ---- reading ----

void CompletionQueue::refill_from_overflow() noexcept
{
	while (!overflow_.empty() && !ring_.full()) {
		ring_.push(std::move(overflow_.front()));
		overflow_.pop_front();
	}
}

void CompletionQueue::pop_locked() noexcept
{
	ring_.pop();
	refill_from_overflow();
	publish_count();
}

void CompletionQueue::copy_out(const Record &record, void *slot) const noexcept
{
	switch (format_) {
	case FI_CQ_FORMAT_CONTEXT: {
		auto *entry = static_cast<struct fi_cq_entry *>(slot);
		entry->op_context = record.op_context;
		break;
	}
	case FI_CQ_FORMAT_MSG: {
		auto *entry = static_cast<struct fi_cq_msg_entry *>(slot);
		entry->op_context = record.op_context;
		entry->flags = record.flags;
		entry->len = record.len;
		break;
	}
	case FI_CQ_FORMAT_DATA: {
		auto *entry = static_cast<struct fi_cq_data_entry *>(slot);
		entry->op_context = record.op_context;
		entry->flags = record.flags;
		entry->len = record.len;
		entry->buf = record.buf;
		entry->data = record.data;
		break;
	}
	default: {
		auto *entry = static_cast<struct fi_cq_tagged_entry *>(slot);
		entry->op_context = record.op_context;
		entry->flags = record.flags;
		entry->len = record.len;
		entry->buf = record.buf;
		entry->data = record.data;
		entry->tag = record.tag;
		break;
	}
	}
}

ssize_t CompletionQueue::read_locked(void *buf, size_t count, fi_addr_t *src_addr)
{
	if (count == 0)
		return 0;
	if (!buf)
		return -FI_EINVAL;
	// Entries are only ever in the overflow list when the ring is full, so the ring's front
	// is the oldest.
	size_t n = 0;
	auto *out = static_cast<uint8_t *>(buf);
	// The ring's entries are older than the overflow's: they are read first, and the
	// overflow refills the ring (and the count is published) once for the batch.
	while (n < count && !ring_.empty() && !ring_.front().error) {
		const Record &record = ring_.front();
		copy_out(record, out + n * entry_size_);
		if (src_addr)
			src_addr[n] = record.src_addr;
		++n;
		ring_.pop();
	}
	if (n) {
		refill_from_overflow();
		publish_count();
	}
	if (empty_locked())
		note_drained();
	if (n)
		return static_cast<ssize_t>(n);
	return ring_.empty() ? -FI_EAGAIN : -FI_EAVAIL;
}

ssize_t CompletionQueue::read(void *buf, size_t count)
{
	return readfrom(buf, count, nullptr);
}

ssize_t CompletionQueue::readfrom(void *buf, size_t count, fi_addr_t *src_addr)
{
	// Still nothing (a busy poller's usual read): no lock either.
	if (!progress_then_ready(count) && count && buf)
		return -FI_EAGAIN;
	LockGuard guard(lock_);
	return read_locked(buf, count, src_addr);
}

bool CompletionQueue::progress_then_ready(size_t count)
{
	note_read();
	// Entries already queued are handed out before progressing again: a completion found
	// by an earlier pass (e.g. one an EQ read's progress placed here) costs its reader no
	// further system calls. Progress runs as soon as the queue is empty. The check is the
	// lock-free count: a reader spinning on an empty queue (rxm's core CQ below its own)
	// took this lock once more per pass for it. A count another thread changes meanwhile
	// costs one extra or one skipped pass, which the next read makes up.
	if (queued() != 0)
		return true;
	progress_for_read(count);
	// The eventfd counts as something: only the locked drain clears it (an FI_GETWAIT fd
	// polled without fi_trywait, a pending fi_cq_signal). A writer racing with this check
	// is a write that came right after the read.
	return queued() != 0 || event_fd_set();
}

ssize_t CompletionQueue::readerr(struct fi_cq_err_entry *buf, uint64_t flags)
{
	if (!buf)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	LockGuard guard(lock_);
	if (ring_.empty() || !ring_.front().error)
		return -FI_EAGAIN;
	Record::ErrorDetail &detail = *ring_.front().error;
	const uint32_t api = domain_.api_version();
	struct fi_cq_err_entry entry = detail.entry;
	last_err_data_ = std::move(detail.err_data);
	size_t copied_data = last_err_data_.size();

	if (api_at_least(api, 1, 5)) {
		// 1.5+: a user buffer (err_data_size > 0 on input) receives a copy; otherwise
		// err_data points at our buffer, valid until the next read.
		if (buf->err_data && buf->err_data_size) {
			copied_data = std::min(buf->err_data_size, last_err_data_.size());
			std::memcpy(buf->err_data, last_err_data_.data(), copied_data);
			entry.err_data = buf->err_data;
		} else {
			entry.err_data = last_err_data_.empty() ? nullptr : last_err_data_.data();
		}
		entry.err_data_size = copied_data;
		*buf = entry;
	} else {
		// Pre-1.5 applications know a shorter struct without err_data_size.
		entry.err_data = last_err_data_.empty() ? nullptr : last_err_data_.data();
		std::memcpy(buf, &entry, offsetof(struct fi_cq_err_entry, err_data_size));
	}
	pop_locked();
	if (empty_locked())
		note_drained();
	return 1;
}

ssize_t CompletionQueue::blocking_read(void *buf, size_t count, fi_addr_t *src_addr,
				       const void *cond, int timeout)
{
	if ((wait_obj_ == FI_WAIT_NONE && !block_without_wait_obj_) || wait_obj_ == FI_WAIT_SET)
		return -FI_ENOSYS;  // man fi_cq: sread is invalid for these wait objects
	// The FI_CQ_COND_THRESHOLD count is a hint (man fi_cq: the provider need not meet the
	// condition before waking), so any completion ends the wait; waiting for more would
	// need wakeups per entry.
	(void)cond;
	return wait_loop(lock_, timeout, [&]() -> ssize_t {
		progress_for_read(count);
		LockGuard guard(lock_);
		return read_locked(buf, count, src_addr);
	});
}

ssize_t CompletionQueue::sread(void *buf, size_t count, const void *cond, int timeout)
{
	return blocking_read(buf, count, nullptr, cond, timeout);
}

ssize_t CompletionQueue::sreadfrom(void *buf, size_t count, fi_addr_t *src_addr,
				   const void *cond, int timeout)
{
	return blocking_read(buf, count, src_addr, cond, timeout);
}

int CompletionQueue::signal()
{
	if (wait_obj_ == FI_WAIT_NONE && !block_without_wait_obj_)
		return -FI_ENOSYS;
	interrupt();
	return 0;
}

const char *CompletionQueue::strerror(int prov_errno, const void *err_data, char *buf,
				      size_t len)
{
	return domain_.prov_strerror(prov_errno, err_data, buf, len);
}

int CompletionQueue::ops_open(const char *name, uint64_t flags, void **ops, void *)
{
	if (!name || !ops)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (std::strcmp(name, OFI_CQ_PROGRESS_OPS_NAME) != 0 || !plain_cq(cq_fid()))
		return -FI_ENOSYS;
	*ops = &progress_ops;
	return 0;
}

int CompletionQueue::control(int command, void *arg)
{
	LockGuard guard(lock_);
	return wait_control(command, arg, wait_obj_);
}

void CompletionQueue::run_progress()
{
	domain_.progress();
}

bool CompletionQueue::has_events()
{
	LockGuard guard(lock_);
	return !empty_locked();
}

} // namespace util
