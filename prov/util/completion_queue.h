// util::CompletionQueue: fi_cq_* for every provider.
//
// Completions live in a fixed ring sized at open (attr->size, default kDefaultSize) in
// arrival order; error completions take their place in the same order, so fi_cq_read
// returns the entries before an error and then -FI_EAVAIL, as the man page describes
// ("the topmost completion is an error").
//
// Overrun policy: a completion is never dropped. When the ring is full, further entries go
// to an overflow list (allocated, so only when exhausted), a warning is logged once, and
// overruns() counts them. Providers that want to avoid that check space() before taking on
// work whose completion they could not hold back.
//
// Providers write completions with write()/write_error() (usually through the
// util::Endpoint helpers) with the domain lock held. Reads progress the domain first
// (manual progress), then copy entries in the CQ's format.
#ifndef OFI_PROV_UTIL_COMPLETION_QUEUE_H
#define OFI_PROV_UTIL_COMPLETION_QUEUE_H

#include "prov/util/domain.h"
#include "prov/util/fid_object.h"
#include "prov/util/lock.h"
#include "prov/util/ops_tables.h"
#include "prov/util/ring.h"
#include "prov/util/waitable.h"

#include <rdma/fi_eq.h>

#include <atomic>
#include <deque>
#include <memory>
#include <vector>

namespace util {

class CompletionQueue : public FidStorage<fid_cq>, public FidObject, public Waitable {
public:
	Waitable *waitable() noexcept override { return this; }
	static constexpr size_t kDefaultSize = 1024;

	// Throws util::Error(-FI_EINVAL/-FI_ENOSYS/...) for unsupported attributes.
	CompletionQueue(Domain &domain, const struct fi_cq_attr *attr, void *context);
	~CompletionQueue() override;

	struct fid_cq *cq_fid() noexcept { return &embedded_fid.pub; }
	Domain &domain() noexcept { return domain_; }
	enum fi_cq_format format() const noexcept { return format_; }
	enum fi_wait_obj wait_obj() const noexcept { return wait_obj_; }

	// ---- provider side ----
	// Queue a successful completion. 'src_addr' is what fi_cq_readfrom reports.
	void write(void *context, uint64_t flags, size_t len = 0, void *buf = nullptr,
		   uint64_t data = 0, uint64_t tag = 0, fi_addr_t src_addr = FI_ADDR_NOTAVAIL);
	// Queue an error completion; err_data (err_data_size bytes) is copied.
	void write_error(const struct fi_cq_err_entry &error,
			 fi_addr_t src_addr = FI_ADDR_NOTAVAIL);
	size_t space();      // free ring slots
	// Completions (and errors) waiting to be read, as of the last write or read: lock-free
	// (a reader spinning on an empty queue checks it on every pass), so only a hint when
	// other threads read or write concurrently.
	size_t queued() const noexcept { return queued_.load(std::memory_order_acquire); }
	size_t overruns() const noexcept { return overruns_; }

	// ---- fi_ops_cq ----
	ssize_t read(void *buf, size_t count);
	ssize_t readfrom(void *buf, size_t count, fi_addr_t *src_addr);
	ssize_t readerr(struct fi_cq_err_entry *buf, uint64_t flags);
	ssize_t sread(void *buf, size_t count, const void *cond, int timeout);
	ssize_t sreadfrom(void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
			  int timeout);
	int signal();
	const char *strerror(int prov_errno, const void *err_data, char *buf, size_t len);

	// ---- fi_ops ----
	int control(int command, void *arg);  // FI_GETWAIT, FI_GETWAITOBJ
	int close() override;
	// OFI_CQ_PROGRESS_OPS_NAME (util/cq_progress_ops.h), for CQs read the util way.
	int ops_open(const char *name, uint64_t flags, void **ops, void *context);

	// A read's progress without the read (for up to `count` entries): true when a read
	// would return something. readfrom's first step, and cq_progress_ops.h's progress().
	bool progress_then_ready(size_t count);
	// cq_progress_ops.h's progress(): progress_then_ready(1), shorter for a plain CQ.
	// Inlined into that entry (completion_queue.cpp, its only caller): one frame less on
	// every pass of rxm over one of our cores.
	[[gnu::always_inline]] inline bool progress_entry();

	// ---- Waitable ----
	void run_progress() override;
	bool has_events() override;

protected:
	// Progress run before a read of 'count' entries (fi_cq_read, each try of fi_cq_sread).
	// Default: always. A provider whose progress is costly may skip it while the queue
	// already fills the request (rxm).
	virtual void progress_for_read(size_t count)
	{
		(void)count;
		run_progress();
	}
	// readfrom's read of what is queued (with the lock when there is one), for a provider
	// that runs its own progress in front of it (rxm).
	ssize_t take(void *buf, size_t count, fi_addr_t *src_addr)
	{
		if (lock_.is_real())
			return take_locked(buf, count, src_addr);
		return read_locked(buf, count, src_addr);
	}
	// fi_cq_sread and fi_cq_signal on an FI_WAIT_NONE CQ, which util refuses (-FI_ENOSYS):
	// for a provider whose blocking works without a wait object (rxm).
	void allow_blocking_without_wait_obj() noexcept { block_without_wait_obj_ = true; }
	// A derived class that replaces fi_ops_cq members installs its own tables.
	template <class Self>
	void install_ops() noexcept
	{
		embedded_fid.pub.fid.ops = ops_ptr<Self, make_fi_ops<Self>>();
		embedded_fid.pub.ops = ops_ptr<Self, make_cq_ops<Self>>();
	}

private:
	struct Record {
		// The entry as FI_CQ_FORMAT_TAGGED returns it. The smaller formats are prefixes
		// of it (checked in completion_queue.cpp), so a read copies one block of the
		// caller's entry size, and a write fills the record as one struct.
		struct fi_cq_tagged_entry entry{};
		fi_addr_t src_addr = FI_ADDR_NOTAVAIL;
		// Set for error completions; owns a copy of err_data. Reset when the error entry
		// is read (readerr), so a slot the ring hands out for a write never holds one.
		struct ErrorDetail {
			struct fi_cq_err_entry entry;
			std::vector<uint8_t> err_data;
		};
		std::unique_ptr<ErrorDetail> error;
	};

	void push(Record &&record);
	// write()'s pieces: the lock around the in-place write, and the write itself.
	[[gnu::noinline]] void write_locked(void *context, uint64_t flags, size_t len, void *buf,
					    uint64_t data, uint64_t tag, fi_addr_t src_addr);
	[[gnu::noinline]] void write_contended(void *context, uint64_t flags, size_t len,
					       void *buf, uint64_t data, uint64_t tag,
					       fi_addr_t src_addr);
	[[gnu::always_inline]] inline void write_in_place(void *context, uint64_t flags,
							  size_t len, void *buf, uint64_t data,
							  uint64_t tag, fi_addr_t src_addr);
	// write() when the ring is full: the entry goes to the overflow list. Out of line, so
	// that write's usual path saves no registers for it.
	[[gnu::noinline]] void write_behind(void *context, uint64_t flags, size_t len, void *buf,
					    uint64_t data, uint64_t tag, fi_addr_t src_addr);
	bool empty_locked() const noexcept { return ring_.empty() && overflow_.empty(); }
	void pop_locked() noexcept;
	// Publishes the entry count for queued() (lock held). The overflow list is almost
	// always empty, and a deque's size() is a dozen instructions on every write and read.
	void publish_count() noexcept
	{
		size_t extra = overflow_.empty() ? 0 : overflow_.size();
		queued_.store(ring_.size() + extra, std::memory_order_release);
	}
	void refill_from_overflow() noexcept;
	ssize_t read_locked(void *buf, size_t count, fi_addr_t *src_addr);
	// readfrom's pieces (each ends in a tail call, see readfrom): progress first when the
	// queue is empty; the read, with the lock when there is one.
	[[gnu::noinline]] ssize_t progress_and_read(void *buf, size_t count, fi_addr_t *src_addr);
	[[gnu::noinline]] ssize_t take_locked(void *buf, size_t count, fi_addr_t *src_addr);
	[[gnu::noinline]] ssize_t take_contended(void *buf, size_t count, fi_addr_t *src_addr);
	// The copy loop for the CQ's format (take_entries of its entry size).
	[[gnu::always_inline]] inline size_t take_in_format(uint8_t *out, size_t count,
							    fi_addr_t *src_addr) noexcept;
	[[gnu::noinline]] ssize_t finish_read(size_t n);
	// read_locked's copy loop for one entry size: up to `count` successful entries from
	// the ring's front, stopping at an error entry; returns how many.
	template <size_t EntrySize>
	[[gnu::always_inline]] inline size_t take_entries(uint8_t *out, size_t count,
							  fi_addr_t *src_addr) noexcept;
	ssize_t blocking_read(void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
			      int timeout);

	Domain &domain_;
	enum fi_cq_format format_;
	enum fi_wait_obj wait_obj_;
	size_t entry_size_;
	bool block_without_wait_obj_ = false;
	std::atomic<bool> progress_is_domains_{false}; // set by ops_open (see progress_entry)
	Lock lock_;
	Ring<Record> ring_;
	std::deque<Record> overflow_;
	size_t overruns_ = 0;
	std::atomic<size_t> queued_{0};
	// Holds the err_data handed out by the last fi_cq_readerr (valid until the next read).
	std::vector<uint8_t> last_err_data_;
	struct fid_wait *wait_set_ = nullptr;
};

} // namespace util

#endif
