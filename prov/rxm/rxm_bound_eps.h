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
#include <memory>
#include <mutex>
#include <vector>

namespace rxm {

class RxmEndpoint;

class BoundEndpoints {
public:
	// concurrent = false: the object's domain is serialised by the application
	// (FI_THREAD_DOMAIN or COMPLETION with manual progress: util's lock policy), so no
	// reader can run beside a remover and the list takes no lock and counts no readers.
	explicit BoundEndpoints(bool concurrent = true) : concurrent_(concurrent)
	{
		if (concurrent_)
			current_.store(new List{});
	}
	~BoundEndpoints()
	{
		delete current_.load();
		for (const List *old : retired_)
			delete old;
	}
	BoundEndpoints(const BoundEndpoints &) = delete;
	BoundEndpoints &operator=(const BoundEndpoints &) = delete;

	void add(RxmEndpoint *ep)
	{
		std::lock_guard guard(lock_);
		std::vector<RxmEndpoint *> next = eps_;
		next.push_back(ep);
		publish(std::move(next));
	}
	// False when ep was not bound. Returns only once no for_each of another thread can
	// still call into ep (a reader that took the list before the removal): the caller
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
		std::vector<RxmEndpoint *> next;
		next.reserve(eps_.size() - 1);
		next.insert(next.end(), eps_.begin(), it);
		next.insert(next.end(), it + 1, eps_.end());
		publish(std::move(next));
		if (!concurrent_)
			return true;
		unsigned old = epoch_.load();
		epoch_.store(old ^ 1);
		// Removing from inside our own for_each (this thread counts in a bucket): waiting
		// would wait for ourselves; the retired lists stay until a later removal.
		if (iterating_here_ == this)
			return true;
		// Lists retired so far can only be held by readers of the old bucket (a reader
		// of the new bucket took the list after the flip: the new one); lists retired
		// while we wait (an add) stay for a later removal.
		std::vector<const List *> unreachable_after_drain;
		unreachable_after_drain.swap(retired_);
		// Announced before looking at the count (both sequentially consistent): a
		// reader leaving the bucket either sees the announcement and wakes us under
		// lock_, or left before our look and we see its count gone.
		removing_.store(true);
		drained_.wait(guard, [&] { return active_[old].load() == 0; });
		removing_.store(false);
		for (const List *list : unreachable_after_drain)
			delete list;
		return true;
	}
	// Calls f on each endpoint of the list as it was when the call began (an endpoint may
	// detach itself while progressing). This runs on every CQ read: a thread-safe reader
	// takes no lock, only its bucket's count, and walks the published list in place.
	// Inlined into each caller (rxm_cq.cpp: one per CQ read): a call in between costs more
	// than the loop it guards.
	template <class F> [[gnu::always_inline]] inline void for_each(F f)
	{
		if (RxmEndpoint *only = sole_serialised()) {
			f(only); // read once, so f may detach it
			return;
		}
		for_each_general(f);
	}
	// The usual CQ of a serialised domain: its one endpoint, read without a lock or a
	// count (see for_each); else null. A caller may test this first and leave the
	// general walk out of line, so that a busy poller's pass saves no registers for it.
	RxmEndpoint *sole_serialised() const noexcept
	{
		return !concurrent_ && eps_.size() == 1 ? eps_.front() : nullptr;
	}
	// for_each without the sole_serialised() case in front.
	template <class F> void for_each_general(F f)
	{
		if (!concurrent_) {
			Snapshot copy;
			copy.take(eps_);
			copy.call(f);
			return;
		}
		// Counted in the bucket of the epoch it saw, then checked that the epoch did not
		// flip meanwhile (all sequentially consistent): a remover that flipped after the
		// check sees this count and waits; a flip before it sends us to the new bucket.
		unsigned bucket;
		for (;;) {
			bucket = epoch_.load();
			active_[bucket].fetch_add(1);
			if (epoch_.load() == bucket)
				break;
			leave(bucket);
		}
		Iteration iteration(*this, bucket);
		const List *list = current_.load();
		for (RxmEndpoint *ep : list->eps)
			f(ep);
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
	// The list readers walk (concurrent objects): never changed once published; add and
	// remove publish a new one and retire the old, freed once no reader can hold it.
	struct List {
		std::vector<RxmEndpoint *> eps;
	};
	// The list as one for_each saw it (serialised objects).
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
	// Under lock_: 'next' becomes the list, and what new readers see. Allocates before
	// changing anything (std::bad_alloc leaves the list as it was).
	void publish(std::vector<RxmEndpoint *> &&next)
	{
		if (!concurrent_) {
			eps_.swap(next);
			return;
		}
		auto fresh = std::make_unique<List>(List{next});
		retired_.reserve(retired_.size() + 1);
		eps_.swap(next);
		retired_.push_back(current_.exchange(fresh.release()));
	}
	// Leaving takes no lock unless a remover waits for this bucket (see remove()).
	void leave(unsigned bucket)
	{
		if (active_[bucket].fetch_sub(1) == 1 && removing_.load()) {
			std::lock_guard guard(lock_);
			drained_.notify_all();
		}
	}
	// Marks this thread as iterating and leaves the bucket when done (also on unwinding).
	class Iteration {
	public:
		Iteration(BoundEndpoints &owner, unsigned bucket)
		    : owner_(owner), bucket_(bucket), outer_(iterating_here_)
		{
			iterating_here_ = &owner;
		}
		~Iteration()
		{
			iterating_here_ = outer_;
			owner_.leave(bucket_);
		}
		Iteration(const Iteration &) = delete;
		Iteration &operator=(const Iteration &) = delete;

	private:
		BoundEndpoints &owner_;
		unsigned bucket_;
		const BoundEndpoints *outer_;
	};

	const bool concurrent_;
	// The default (dynamic) TLS model: libfabric.so is dlopened (Open MPI's mca_mtl_ofi,
	// fi_tostr's reference test), and an initial-exec variable then needs glibc's spare
	// static TLS, which such processes have used up ("cannot allocate memory in static TLS
	// block"). A __tls_get_addr call per CQ read is the price.
	static inline thread_local const BoundEndpoints *iterating_here_ = nullptr;
	std::mutex remove_lock_;
	std::mutex lock_;  // guards eps_ and retired_; serialises publishing
	std::condition_variable drained_;
	std::vector<RxmEndpoint *> eps_;
	std::atomic<const List *> current_{nullptr};
	std::vector<const List *> retired_;
	std::atomic<unsigned> epoch_{0};
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
