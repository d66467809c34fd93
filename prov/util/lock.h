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
// one compare-and-swap, a plain store and a load plus the owner check. Contended, a thread
// sleeps on the lock word (futex), as glibc's does.
//
// The release is a plain store, not a locked instruction: a locked instruction is a full
// barrier, and the one right after a shared-memory send (shm's slot stores, whose line the
// receiver polls) waited there for that line's transfer, most of the sender's time in a
// message-rate stream. A releaser must still learn that a thread sleeps on the lock: it
// stores the lock free, then reads the waiter count; a waiter counts itself, then reads
// the lock word (in its futex wait). Each side's read must see the other's store or both
// can miss (no wake, a sleeper forever): the waiter, the rare side, pays for both with
// membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), a full barrier on every running thread of
// the process, so the releaser needs none. Where membarrier is missing (old kernel,
// seccomp) both sides fence instead, as a locked release did.
#ifndef OFI_PROV_UTIL_LOCK_H
#define OFI_PROV_UTIL_LOCK_H

#include <rdma/fabric.h>

#include <linux/futex.h>
#if __has_include(<linux/membarrier.h>)
#include <linux/membarrier.h>
#endif
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

	explicit Lock(Kind kind = Kind::Mutex) noexcept { set_kind(kind); }
	Lock(const Lock &) = delete;
	Lock &operator=(const Lock &) = delete;

	// Decide once, before the lock is shared (e.g. in a domain constructor).
	void set_kind(Kind kind) noexcept
	{
		real_ = kind == Kind::Mutex;
		light_ = real_ && light_release_ready();
	}
	bool is_real() const noexcept { return real_; }

	void lock()
	{
		if (!real_)
			return;
		uintptr_t self = self_id();
		if (try_enter(self))
			return;
		wait_for_it();
		take(self);
	}
	void unlock()
	{
		if (!real_ || --depth_)
			return;
		owner_.store(0, std::memory_order_relaxed);
		release();
	}
	bool try_lock()
	{
		if (!real_)
			return true;
		return try_enter(self_id());
	}
	// A real lock taken only if nobody holds it, this thread included (no recursion, no
	// waiting); false otherwise, and the caller locks the usual way. For short sections
	// that must make no call while holding the lock (a call there costs the caller a
	// register save on every entry): lock_free_only() ... unlock_free_only(). Such a
	// section cannot re-enter the lock, so it records no owner and no depth: the owner
	// word stays 0 (every unlock clears it), which no thread takes for its own.
	bool lock_free_only() noexcept { return take_word(); }
	// Releases what lock_free_only() took (and only that).
	void unlock_free_only() noexcept { release(); }

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

	// Whether real locks release with a plain store (membarrier is there and this process
	// is registered for its private expedited command); decided once per process.
	static bool light_release_ready() noexcept
	{
		static const bool ready = register_membarrier();
		return ready && !force_fenced_flag().load(std::memory_order_relaxed);
	}
	// Test hook: locks whose kind is set while this is on fence on both sides, as where
	// membarrier is missing.
	static void force_fenced_release(bool on) noexcept
	{
		force_fenced_flag().store(on, std::memory_order_relaxed);
	}
	// Whether this lock releases with a plain store (see the top of this file).
	bool light_release() const noexcept { return light_; }

private:
	// The lock word: free or held. Sleepers count themselves in waiters_ (see the top).
	static constexpr int kFree = 0, kHeld = 1;

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
	// Enters once more if self holds it, else takes it if free; false when another
	// thread has it.
	bool try_enter(uintptr_t self) noexcept
	{
		if (held_by(self)) {
			++depth_;
			return true;
		}
		if (!take_word())
			return false;
		take(self);
		return true;
	}
	bool take_word() noexcept
	{
		int seen = kFree;
		return state_.compare_exchange_strong(seen, kHeld, std::memory_order_acquire,
						      std::memory_order_relaxed);
	}
	void take(uintptr_t self) noexcept
	{
		owner_.store(self, std::memory_order_relaxed);
		depth_ = 1;
	}
	// The lock word free, then whether anyone sleeps. Light: the store and the load may
	// pass each other in this CPU (nothing orders them here); a waiter's membarrier makes
	// this thread's store visible or its load see the waiter. Else a fence between them,
	// paired with the waiter's.
	void release() noexcept
	{
		state_.store(kFree, std::memory_order_release);
		if (light_)
			std::atomic_signal_fence(std::memory_order_seq_cst);
		else
			std::atomic_thread_fence(std::memory_order_seq_cst);
		if (waiters_.load(std::memory_order_relaxed)) [[unlikely]]
			wake_one();
	}
	// Counted before the first look at the word and until taken: every release whose
	// load of the count comes after the barrier below sees this thread, and every one
	// before it has its free word visible to the look after the barrier. A futex wait
	// returns at once if the word is no longer held (EAGAIN), on a wake, or on a signal:
	// the compare-and-swap decides. Without that barrier (membarrier failed after the
	// process registered: a seccomp filter installed since, say) a wake may be missed,
	// so the sleeps are short instead of unbounded. (A forked child stays registered.)
	[[gnu::noinline]] void wait_for_it() noexcept
	{
		waiters_.fetch_add(1, std::memory_order_relaxed);
		bool ordered = order_with_releasers();
		timespec poll{0, 200 * 1000};
		while (!take_word())
			syscall(SYS_futex, word(), FUTEX_WAIT_PRIVATE, kHeld,
				ordered ? nullptr : &poll, nullptr, 0);
		waiters_.fetch_sub(1, std::memory_order_relaxed);
	}
	bool order_with_releasers() noexcept
	{
		if (!light_) {
			std::atomic_thread_fence(std::memory_order_seq_cst);
			return true;
		}
#if defined(SYS_membarrier) && __has_include(<linux/membarrier.h>)
		return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
		return false;
#endif
	}
	[[gnu::noinline]] void wake_one() noexcept
	{
		syscall(SYS_futex, word(), FUTEX_WAKE_PRIVATE, 1, nullptr, nullptr, 0);
	}
	static bool register_membarrier() noexcept
	{
#if defined(SYS_membarrier) && __has_include(<linux/membarrier.h>)
		long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
		long needed = MEMBARRIER_CMD_PRIVATE_EXPEDITED |
			      MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED;
		return cmds >= 0 && (cmds & needed) == needed &&
		       syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#else
		return false;
#endif
	}
	static std::atomic<bool> &force_fenced_flag() noexcept
	{
		static std::atomic<bool> on{false};
		return on;
	}
	int *word() noexcept { return reinterpret_cast<int *>(&state_); }

	bool real_ = false;
	bool light_ = false; // release with a plain store (decided with the kind)
	std::atomic<int> state_{kFree};
	std::atomic<int> waiters_{0}; // threads in wait_for_it (the same line as the word)
	unsigned depth_ = 0; // the owner's nesting; touched only while held
	std::atomic<uintptr_t> owner_{0};
	static_assert(sizeof(std::atomic<int>) == sizeof(int) &&
			      std::atomic<int>::is_always_lock_free,
		      "the futex waits on the lock word itself");
};

using LockGuard = std::lock_guard<Lock>;

} // namespace util

#endif
