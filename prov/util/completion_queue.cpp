#include "prov/util/completion_queue.h"

#include "prov/util/cq_progress_ops.h"
#include "prov/util/error.h"
#include "prov/util/info_util.h"
#include "prov/util/wait_set.h"

#include <rdma/providers/fi_log.h>

#include <algorithm>
#include <cstring>
#include <typeinfo>

namespace util {

inline bool CompletionQueue::progress_entry()
{
	// progress_then_ready(1) for a CQ whose progress_for_read and run_progress are util's
	// (the domain's pass): the core CQ below rxm, looked at on each of rxm's passes.
	if (!progress_is_domains_.load(std::memory_order_relaxed))
		return progress_then_ready(1);
	note_read();
	if (queued() != 0)
		return true;
	domain_.progress();
	return queued() != 0 || event_fd_set();
}

namespace {

// A CQ record holds an fi_cq_tagged_entry, and a read copies the first entry_size_of(format)
// bytes of it: each smaller format must be a prefix of the tagged one.
template <class Entry>
constexpr bool is_prefix_of_tagged()
{
	return sizeof(Entry) <= sizeof(struct fi_cq_tagged_entry) &&
	       offsetof(Entry, op_context) == offsetof(struct fi_cq_tagged_entry, op_context);
}
static_assert(is_prefix_of_tagged<struct fi_cq_entry>());
static_assert(is_prefix_of_tagged<struct fi_cq_msg_entry>() &&
	      offsetof(struct fi_cq_msg_entry, flags) == offsetof(struct fi_cq_tagged_entry, flags) &&
	      offsetof(struct fi_cq_msg_entry, len) == offsetof(struct fi_cq_tagged_entry, len));
static_assert(is_prefix_of_tagged<struct fi_cq_data_entry>() &&
	      offsetof(struct fi_cq_data_entry, flags) == offsetof(struct fi_cq_tagged_entry, flags) &&
	      offsetof(struct fi_cq_data_entry, len) == offsetof(struct fi_cq_tagged_entry, len) &&
	      offsetof(struct fi_cq_data_entry, buf) == offsetof(struct fi_cq_tagged_entry, buf) &&
	      offsetof(struct fi_cq_data_entry, data) == offsetof(struct fi_cq_tagged_entry, data));

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
		return q->progress_entry() ? 1 : 0;
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
	// Every completion of the data path comes here. Unlocked (FI_THREAD_DOMAIN): the body
	// below with nothing but tail calls, so it saves no registers; locked: the same body
	// under the lock, one call further down.
	if (lock_.is_real())
		return write_locked(context, flags, len, buf, data, tag, src_addr);
	write_in_place(context, flags, len, buf, data, tag, src_addr);
}

void CompletionQueue::write_locked(void *context, uint64_t flags, size_t len, void *buf,
				   uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	// The usual case (a free lock, a free slot, nobody to wake) makes no call while it
	// holds the lock; anything else takes the general path.
	if (!lock_.lock_free_only()) [[unlikely]]
		return write_contended(context, flags, len, buf, data, tag, src_addr);
	Record *slot = ring_.back_slot();
	if (!slot || event_fd_due()) [[unlikely]] {
		lock_.unlock_free_only();
		return write_contended(context, flags, len, buf, data, tag, src_addr);
	}
	slot->entry = {context, flags, len, buf, data, tag};
	slot->src_addr = src_addr;
	ring_.commit_back();
	queued_.store(ring_.size(), std::memory_order_release);
	lock_.unlock_free_only();
}

void CompletionQueue::write_contended(void *context, uint64_t flags, size_t len, void *buf,
				      uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	LockGuard guard(lock_);
	write_in_place(context, flags, len, buf, data, tag, src_addr);
}

inline void CompletionQueue::write_in_place(void *context, uint64_t flags, size_t len,
					     void *buf, uint64_t data, uint64_t tag,
					     fi_addr_t src_addr)
{
	// Written in place in the ring. The overflow list holds entries only while the ring is
	// full (every pop refills the ring from it), so a free ring slot means the overflow is
	// empty: the entry goes there, and the count published is the ring's. The slot holds
	// no error detail (readerr resets it when it pops an error entry).
	Record *slot = ring_.back_slot();
	if (!slot) [[unlikely]]
		return write_behind(context, flags, len, buf, data, tag, src_addr);
	slot->entry = {context, flags, len, buf, data, tag};
	slot->src_addr = src_addr;
	ring_.commit_back();
	queued_.store(ring_.size(), std::memory_order_release);
	note_event_added();
}

void CompletionQueue::write_behind(void *context, uint64_t flags, size_t len, void *buf,
				   uint64_t data, uint64_t tag, fi_addr_t src_addr)
{
	Record record;
	record.entry = {context, flags, len, buf, data, tag};
	record.src_addr = src_addr;
	push(std::move(record)); // behind the overflow; the lock is recursive
}

void CompletionQueue::write_error(const struct fi_cq_err_entry &error, fi_addr_t src_addr)
{
	Record record;
	record.entry = {error.op_context, error.flags, error.len, error.buf, error.data, error.tag};
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
	ring_.front().error.reset(); // the slot is written in place next (see write())
	ring_.pop();
	refill_from_overflow();
	publish_count();
}

template <size_t EntrySize>
inline size_t CompletionQueue::take_entries(uint8_t *out, size_t count, fi_addr_t *src_addr) noexcept
{
	size_t n = 0;
	while (n < count && !ring_.empty()) {
		const Record &record = ring_.front();
		if (record.error)
			break;
		std::memcpy(out, &record.entry, EntrySize); // the caller's format: a prefix
		out += EntrySize;
		if (src_addr)
			src_addr[n] = record.src_addr;
		++n;
		ring_.pop();
	}
	return n;
}

inline size_t CompletionQueue::take_in_format(uint8_t *out, size_t count,
					     fi_addr_t *src_addr) noexcept
{
	// Compares rather than a switch: a position-independent jump table cost as much as
	// the copy; the tagged format (rxm's, the tag matching MPI layers') comes first.
	if (format_ == FI_CQ_FORMAT_TAGGED) [[likely]]
		return take_entries<sizeof(struct fi_cq_tagged_entry)>(out, count, src_addr);
	if (format_ == FI_CQ_FORMAT_DATA)
		return take_entries<sizeof(struct fi_cq_data_entry)>(out, count, src_addr);
	if (format_ == FI_CQ_FORMAT_MSG)
		return take_entries<sizeof(struct fi_cq_msg_entry)>(out, count, src_addr);
	return take_entries<sizeof(struct fi_cq_entry)>(out, count, src_addr);
}

ssize_t CompletionQueue::read_locked(void *buf, size_t count, fi_addr_t *src_addr)
{
	if (count == 0)
		return 0;
	if (!buf)
		return -FI_EINVAL;
	// One copy loop per entry size: a fixed-size copy is a few moves, a switch per entry
	// cost more than the copy.
	size_t n = take_in_format(static_cast<uint8_t *>(buf), count, src_addr);
	// Entries waiting in the overflow list, or an eventfd to clear: the rare ends, out of
	// line (a call here made every read save registers).
	if (!overflow_.empty() || event_fd_set()) [[unlikely]]
		return finish_read(n);
	if (n) {
		queued_.store(ring_.size(), std::memory_order_release); // once for the batch
		return static_cast<ssize_t>(n);
	}
	return ring_.empty() ? -FI_EAGAIN : -FI_EAVAIL;
}

ssize_t CompletionQueue::finish_read(size_t n)
{
	// The ring's entries are older than the overflow's (which holds entries only while the
	// ring is full): they were read first, and the overflow refills the ring.
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
	// Entries already queued (the lock-free count; see progress_then_ready): read them
	// without progressing. Only tail calls here, so neither path saves registers first.
	note_read();
	if (queued() == 0)
		return progress_and_read(buf, count, src_addr);
	return take(buf, count, src_addr);
}

ssize_t CompletionQueue::progress_and_read(void *buf, size_t count, fi_addr_t *src_addr)
{
	// progress_then_ready's steps after its check of the count (readfrom's own): still
	// nothing (a busy poller's usual read) takes no lock either.
	progress_for_read(count);
	if (queued() == 0 && !event_fd_set() && count && buf)
		return -FI_EAGAIN;
	return take(buf, count, src_addr);
}

ssize_t CompletionQueue::take_locked(void *buf, size_t count, fi_addr_t *src_addr)
{
	// As write_locked: the usual case (a free lock, entries in the ring only, no eventfd
	// to clear) makes no call while it holds the lock.
	if (count == 0 || !buf || !lock_.lock_free_only()) [[unlikely]]
		return take_contended(buf, count, src_addr);
	if (!overflow_.empty() || event_fd_set()) [[unlikely]] {
		lock_.unlock_free_only();
		return take_contended(buf, count, src_addr);
	}
	size_t n = take_in_format(static_cast<uint8_t *>(buf), count, src_addr);
	ssize_t result;
	if (n) {
		queued_.store(ring_.size(), std::memory_order_release);
		result = static_cast<ssize_t>(n);
	} else {
		result = ring_.empty() ? -FI_EAGAIN : -FI_EAVAIL;
	}
	lock_.unlock_free_only();
	return result;
}

ssize_t CompletionQueue::take_contended(void *buf, size_t count, fi_addr_t *src_addr)
{
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
	// Known only once the object is built (not in the constructor): whether its read's
	// progress is util's own, which the entry then runs without the two virtual calls.
	progress_is_domains_.store(typeid(*this) == typeid(CompletionQueue),
				   std::memory_order_relaxed);
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
