// util::MemoryMonitor: tells registration caches (util::MrCache) which address ranges the
// process stopped having: munmap, mremap (the old range), madvise DONTNEED/FREE/REMOVE and a
// brk shrink. A cached registration pins the pages it was made on; after such a call the
// address holds other pages (or none), so an entry covering it must not be used again.
//
// How: one userfaultfd per process (O_CLOEXEC|O_NONBLOCK, UFFD_USER_MODE_ONLY when the
// plain one is refused) with the UNMAP, REMOVE and REMAP events, ranges registered with
// UFFDIO_REGISTER_MODE_WP only. Nothing is ever write-protected, so no page fault is ever
// trapped (a kernel copy into a watched range after DONTNEED works as before). The kernel
// makes the unmapping thread wait until the event is read, so one reader thread per process
// reads them; it never waits for a lock that a thread which unmaps could hold: it only
// appends the ranges to a log (a fixed ring, no allocation) under a mutex nobody holds
// while calling anything that unmaps. Caches read the log on their next operation.
//
// Why no cache can use a stale entry: the reader counts a read as started before it reads
// (which is what lets the munmap return) and as done once its ranges are in the log.
// sync() waits until every read started so far is done: a cache that calls it and then
// reads the log sees every range whose unmap returned before. The wait is bounded by one
// read in flight (a few instructions and log_mutex_), never by the kernel or a lock.
//
// Users: acquire() starts the monitor (first user) and release() stops it (last user: the
// thread is joined and the userfaultfd closed, which unregisters every watched range), so
// a dlclose'd library leaves no thread behind. Without userfaultfd (kernel, seccomp, or
// FI_MR_CACHE_MONITOR=disabled) acquire() returns false and callers cache nothing.
#ifndef OFI_PROV_UTIL_MEMORY_MONITOR_H
#define OFI_PROV_UTIL_MEMORY_MONITOR_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <pthread.h>

namespace util {

struct UnmappedRange {
	uintptr_t start;
	uintptr_t end; // exclusive
};

class MemoryMonitor {
public:
	static constexpr size_t kLogSize = 256;

	// The process's monitor.
	static MemoryMonitor &instance();

	// Starts the monitor for one more user; false when it cannot run (see above).
	bool acquire();
	// The user is gone; the last one stops the thread.
	void release();

	// Watch [addr, addr+len) (widened to pages). false: it cannot be watched (another
	// userfaultfd holds it, a file mapping without write-protect support, no mapping):
	// its registration must not be cached. A watched range stays watched until unmapped
	// or until the monitor stops.
	bool watch(const void *addr, size_t len);

	// Returns once the ranges of every event read so far are in the log.
	void sync() const;
	// Number of ranges ever logged; a reader keeps the count it has seen.
	uint64_t logged() const { return logged_.load(std::memory_order_seq_cst); }
	// Copies the ranges logged after 'seen' (at most kLogSize) into out and sets seen to
	// logged(). Returns how many, or -1 when more than kLogSize were logged since (the
	// reader must then drop everything it caches).
	int read_log(uint64_t &seen, UnmappedRange *out);

	// For tests: whether userfaultfd could be opened at all in this process.
	static bool available();

private:
	MemoryMonitor() = default;
	static int open_uffd();
	void run();
	void log_event(uintptr_t start, uintptr_t end);

	std::mutex life_mutex_; // acquire/release; never taken by the reader thread
	int users_ = 0;
	int uffd_ = -1;
	int wake_fd_ = -1;
	pthread_t reader_{};
	static void *reader_main(void *self);
	std::atomic<bool> stop_{false};
	std::atomic<uint64_t> reads_started_{0};
	std::atomic<uint64_t> reads_done_{0};

	std::mutex log_mutex_; // only copies of PODs happen under it
	UnmappedRange log_[kLogSize] = {};
	std::atomic<uint64_t> logged_{0};
};

} // namespace util

#endif
