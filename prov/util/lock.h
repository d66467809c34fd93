// Lock whose strength is chosen when the owning object is opened (DESIGN rule 3):
// FI_THREAD_SAFE, FI_THREAD_ENDPOINT or an auto-progress thread need a real mutex; with
// FI_THREAD_DOMAIN / FI_THREAD_COMPLETION and manual progress the application already
// serialises access, so locking is skipped. The mutex is recursive because progress
// callbacks may re-enter objects of the same domain (e.g. write to an EQ whose read
// progresses that domain).
#ifndef OFI_PROV_UTIL_LOCK_H
#define OFI_PROV_UTIL_LOCK_H

#include <rdma/fabric.h>

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
		if (real_)
			mutex_.lock();
	}
	void unlock()
	{
		if (real_)
			mutex_.unlock();
	}
	bool try_lock() { return real_ ? mutex_.try_lock() : true; }

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
	bool real_;
	std::recursive_mutex mutex_;
};

using LockGuard = std::lock_guard<Lock>;

} // namespace util

#endif
