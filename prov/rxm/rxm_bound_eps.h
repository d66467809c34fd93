// BoundEndpoints: the rxm endpoints bound to one CQ or counter. Reading or waiting on the
// object drives their progress (manual progress: the application polls only its CQ), and a
// blocked reader asks their cores whether it may sleep.
//
// A list per object rather than progress sources on the domain's engine: a domain pass would
// progress every endpoint of the domain (each a core CQ read, a system call) on every read,
// which costs 100 system calls per read in rxm_wait_scale's 100 endpoints on one domain.
#ifndef OFI_PROV_RXM_BOUND_EPS_H
#define OFI_PROV_RXM_BOUND_EPS_H

#include "prov/util/waitable.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace rxm {

class RxmEndpoint;

class BoundEndpoints {
public:
	// concurrent = false: the object's domain is serialised by the application
	// (FI_THREAD_DOMAIN or COMPLETION with manual progress: util's lock policy), so no
	// reader can run beside a remover and the list takes no lock and counts no readers.
	explicit BoundEndpoints(bool concurrent = true) : concurrent_(concurrent) {}

	void add(RxmEndpoint *ep)
	{
		std::lock_guard guard(lock_);
		eps_.push_back(ep);
	}
	// False when ep was not bound. Returns only once no for_each of another thread can
	// still call into ep (a reader that copied the list before the removal): the caller
	// (fi_close of the endpoint) frees ep next. One remover at a time flips the epoch so
	// that new readers count in the other bucket, then waits for the old bucket to drain:
	// a reader that loops on its CQ cannot starve the close.
	bool remove(RxmEndpoint *ep)
	{
		std::lock_guard removing(remove_lock_);
		std::unique_lock guard(lock_);
		auto it = std::find(eps_.begin(), eps_.end(), ep);
		if (it == eps_.end())
			return false;
		eps_.erase(it);
		if (!concurrent_)
			return true;
		unsigned old = epoch_;
		epoch_ ^= 1;
		// Removing from inside our own for_each (this thread counts in a bucket): waiting
		// would wait for ourselves.
		if (iterating_here_ != this) {
			// Announced before looking at the count (both sequentially consistent): a
			// reader leaving the bucket either sees the announcement and wakes us under
			// lock_, or left before our look and we see its count gone.
			removing_.store(true);
			drained_.wait(guard, [&] { return active_[old].load() == 0; });
			removing_.store(false);
		}
		return true;
	}
	// Calls f on a copy of the list (an endpoint may detach itself while progressing),
	// without allocating for up to kFew endpoints: this runs on every read.
	template <class F> void for_each(F f)
	{
		Snapshot copy;
		if (!concurrent_) {
			copy.take(eps_);
			copy.call(f);
			return;
		}
		unsigned bucket;
		{
			std::lock_guard guard(lock_);
			copy.take(eps_);
			bucket = epoch_;
			++active_[bucket];
		}
		Iteration iteration(*this, bucket);
		copy.call(f);
	}
	// Stops at the first f that returns false; says whether all returned true.
	template <class F> bool all_of(F f)
	{
		bool all = true;
		for_each([&](RxmEndpoint *ep) { all = all && f(ep); });
		return all;
	}

private:
	static constexpr size_t kFew = 8;
	// The list as one for_each saw it.
	struct Snapshot {
		RxmEndpoint *few[kFew];
		std::vector<RxmEndpoint *> many;
		RxmEndpoint **eps = few;
		size_t n = 0;
		void take(const std::vector<RxmEndpoint *> &from)
		{
			n = from.size();
			if (n <= kFew) {
				std::copy(from.begin(), from.end(), few);
			} else {
				many = from;
				eps = many.data();
			}
		}
		template <class F> void call(F &f)
		{
			for (size_t i = 0; i < n; i++)
				f(eps[i]);
		}
	};
	// Marks this thread as iterating and leaves the bucket when done (also on unwinding).
	class Iteration {
	public:
		Iteration(BoundEndpoints &owner, unsigned bucket)
		    : owner_(owner), bucket_(bucket), outer_(iterating_here_)
		{
			iterating_here_ = &owner;
		}
		// Leaving takes no lock unless a remover waits for this bucket (this runs on
		// every CQ read; see remove()).
		~Iteration()
		{
			iterating_here_ = outer_;
			if (owner_.active_[bucket_].fetch_sub(1) == 1 && owner_.removing_.load()) {
				std::lock_guard guard(owner_.lock_);
				owner_.drained_.notify_all();
			}
		}
		Iteration(const Iteration &) = delete;
		Iteration &operator=(const Iteration &) = delete;

	private:
		BoundEndpoints &owner_;
		unsigned bucket_;
		const BoundEndpoints *outer_;
	};

	const bool concurrent_;
	static inline thread_local const BoundEndpoints *iterating_here_ = nullptr;
	std::mutex remove_lock_;
	std::mutex lock_;  // guards eps_ and epoch_; active_ grows under it
	std::condition_variable drained_;
	std::vector<RxmEndpoint *> eps_;
	unsigned epoch_ = 0;
	std::atomic<size_t> active_[2] = {0, 0};
	std::atomic<bool> removing_{false}; // a remover waits for a bucket to drain
};

// The core side of fi_trywait and of "may a blocked reader sleep" for the endpoints bound
// to an object (defined in rxm_endpoint.cpp).
int cores_trywait(BoundEndpoints &eps);
bool cores_may_sleep(BoundEndpoints &eps);
// After FI_GETWAIT on a CQ or counter (outside its lock): its holder may poll the fd without
// fi_trywait, so the endpoints hand out their core and shm CQs' fds too
// (RxmEndpoint::hand_out_lower_wait_fds).
void cores_wait_fd_handed_out(BoundEndpoints &eps);

// fi_trywait on the rxm fabric for a CQ or counter: progress, then ask the cores whether
// blocking is safe, then util's trywait (arms the exported fd unless something arrived).
inline int trywait_with_cores(util::Waitable &object, BoundEndpoints &eps)
{
	object.run_progress();
	if (object.has_events())
		return -FI_EAGAIN;
	int rc = cores_trywait(eps);
	return rc ? rc : object.trywait();
}

} // namespace rxm

#endif
