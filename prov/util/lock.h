// Lock whose strength is chosen when the owning object is opened (DESIGN rule 3):
// FI_THREAD_SAFE, FI_THREAD_ENDPOINT or an auto-progress thread need a real mutex; with
// FI_THREAD_DOMAIN / FI_THREAD_COMPLETION and manual progress the application already
// serialises access, so locking is skipped. The mutex is recursive because progress
// callbacks may re-enter objects of the same domain (e.g. write to an EQ whose read
// progresses that domain).
//
// The real lock is ours rather than std::recursive_mutex: every message of a thread-safe
// application takes about a dozen of them uncontended (endpoint, CQs, engine, lower domain),
// and glibc's recursive mutex cost ~72 instructions a lock/unlock pair there; this one is
// one compare-and-swap and one atomic decrement plus the owner check (~25). Contended, a
// thread sleeps on the lock word (futex), as glibc's does.
#ifndef OFI_PROV_UTIL_LOCK_H
#define OFI_PROV_UTIL_LOCK_H

#include <rdma/fabric.h>

#include <linux/futex.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <mutex>

namespace util {

class Lock {
public:
	enum class Kind { None, Mutex };

	explicit Lock(Kind kind = Kind::Mutex) noexcept : real_(kind == Kind::Mutex) {}
	Lock(const Lock &) = delete;
	Lock &operator=(const Lock &) = delete;

	// Decide once, before the lock is shared (e.g. in a domain constructor).
	void set_kind(Kind kind) noexcept { real_ = kind == Kind::Mutex; }
	bool is_real() const noexcept { return real_; }

	void lock()
	{
		if (!real_)
			return;
		uintptr_t self = self_id();
		int seen;
		if (try_enter(self, seen))
			return;
		wait_for_it(seen);
		take(self);
	}
	void unlock()
	{
		if (!real_ || --depth_)
			return;
		owner_.store(0, std::memory_order_relaxed);
		if (state_.fetch_sub(1, std::memory_order_release) != kHeld)
			wake_one();
	}
	bool try_lock()
	{
		if (!real_)
			return true;
		int seen;
		return try_enter(self_id(), seen);
	}
	// A real lock taken only if nobody holds it, this thread included (no recursion, no
	// waiting); false otherwise, and the caller locks the usual way. For short sections
	// that must make no call while holding the lock (a call there costs the caller a
	// register save on every entry): lock_free_only() ... unlock_free_only(). Such a
	// section cannot re-enter the lock, so it records no owner and no depth: the owner
	// word stays 0 (every unlock clears it), which no thread takes for its own.
	bool lock_free_only() noexcept
	{
		int seen = kFree;
		return state_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire,
						      std::memory_order_relaxed);
	}
	// Releases what lock_free_only() took (and only that).
	void unlock_free_only() noexcept
	{
		if (state_.fetch_sub(1, std::memory_order_release) != kHeld)
			wake_one();
	}

	// The policy for objects of a domain with these attributes.
	static Kind kind_for(enum fi_threading threading, enum fi_progress data_progress,
			     enum fi_progress control_progress) noexcept
	{
		if (data_progress == FI_PROGRESS_AUTO || control_progress == FI_PROGRESS_AUTO)
			return Kind::Mutex;
		if (threading == FI_THREAD_DOMAIN || threading == FI_THREAD_COMPLETION)
			return Kind::None;
		return Kind::Mutex;
	}

private:
	// The lock word: free, held, or held with threads (maybe) asleep on it (then the
	// holder's unlock wakes one). A woken thread takes it as "contended" again, since it
	// cannot know whether others still sleep: at worst one futex wake too many.
	static constexpr int kFree = 0, kHeld = 1, kContended = 2;

	// A non-zero id unique among live threads. The thread pointer (what pthread_self()
	// returns on these targets) read directly: pthread_self() is a call into libc on every
	// lock, and a call on that path made every inlined lock save the caller's registers.
	// No TLS variable is involved (the library avoids the initial-exec TLS model).
	static uintptr_t self_id() noexcept
	{
#if defined(__x86_64__) || defined(__aarch64__)
		return reinterpret_cast<uintptr_t>(__builtin_thread_pointer());
#else
		return static_cast<uintptr_t>(pthread_self());
#endif
	}
	// Only the owner itself can find its own id here: it stored it, and clears it
	// before letting go.
	bool held_by(uintptr_t self) const noexcept
	{
		return owner_.load(std::memory_order_relaxed) == self;
	}
	// Enters once more if self holds it, else takes it if free; false (and what the lock
	// word held) when another thread has it.
	bool try_enter(uintptr_t self, int &seen) noexcept
	{
		if (held_by(self)) {
			++depth_;
			return true;
		}
		seen = kFree;
		if (!state_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire,
						    std::memory_order_relaxed))
			return false;
		take(self);
		return true;
	}
	void take(uintptr_t self) noexcept
	{
		owner_.store(self, std::memory_order_relaxed);
		depth_ = 1;
	}
	[[gnu::noinline]] void wait_for_it(int seen) noexcept
	{
		if (seen != kContended)
			seen = state_.exchange(kContended, std::memory_order_acquire);
		while (seen != kFree) {
			// Returns at once if the word is no longer kContended (EAGAIN), or on a
			// signal: the exchange decides.
			syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, kContended, nullptr, nullptr, 0);
			seen = state_.exchange(kContended, std::memory_order_acquire);
		}
	}
	[[gnu::noinline]] void wake_one() noexcept
	{
		state_.store(kFree, std::memory_order_release);
		syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
	}
	int *word() noexcept { return reinterpret_cast<int *>(&state_); }

	bool real_;
	std::atomic<int> state_{kFree};
	std::atomic<uintptr_t> owner_{0};
	unsigned depth_ = 0; // the owner's nesting; touched only while held
	static_assert(sizeof(std::atomic<int>) == sizeof(int) &&
			      std::atomic<int>::is_always_lock_free,
		      "the futex waits on the lock word itself");
};

using LockGuard = std::lock_guard<Lock>;

} // namespace util

#endif
