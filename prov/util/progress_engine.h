// The progress engine of one domain (DESIGN rule 4), also used by the fabric for passive
// endpoints.
//
// Providers register
//   (a) progress sources: objects whose progress() runs on every pass (e.g. rxm polling its
//       core CQs, tcp retrying blocked sends), and
//   (b) file descriptors (sockets, core CQ/EQ wait fds) in an epoll set, each optionally
//       with a handler that is called when the fd is ready.
// A pass (progress()) dispatches ready fds (epoll_wait with timeout 0) and then runs every
// source, all under the engine lock. Blocking readers (fi_cq_sread, fi_eq_sread,
// fi_cntr_wait, fi_wait) put fd() into their own epoll set: it is readable whenever a
// registered fd is ready, so they sleep in the kernel instead of spinning.
// With FI_PROGRESS_AUTO, start_thread() runs the same passes from a thread that blocks in
// epoll_wait and is stopped through an eventfd.
//
// Level-triggered: register EPOLLOUT only while you have something to send, and drain or
// disarm a readable fd in its handler, otherwise blocked readers wake up in a loop.
#ifndef OFI_PROV_UTIL_PROGRESS_ENGINE_H
#define OFI_PROV_UTIL_PROGRESS_ENGINE_H

#include "prov/util/lock.h"
#include "prov/util/sleep_report.h"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

namespace util {

// Called on every progress pass.
class ProgressSource {
public:
	virtual ~ProgressSource() = default;
	virtual void progress() = 0;

	// Run (under the engine lock) right before a thread sleeps on the engine's fd: a
	// blocked reader (fi_cq_sread, fi_cntr_wait, fi_wait), fi_trywait, or the
	// auto-progress thread. A source that learns of work through memory rather than an
	// fd (a shared-memory ring) asks its peer for a wake-up here, not on every pass, so
	// a busy poller costs the peer no system call; after asking it looks again and
	// returns false if work is already there (the caller then progresses instead of
	// sleeping). Default: nothing to arm.
	virtual bool before_sleep() { return true; }
};

// Called when a registered fd is ready; 'events' are EPOLLIN/EPOLLOUT/EPOLLERR/EPOLLHUP bits.
class FdHandler {
public:
	virtual ~FdHandler() = default;
	virtual void on_fd_ready(int fd, uint32_t events) = 0;

	// Busy-polling fast path (see ProgressEngine::progress). A handler whose fd is a
	// non-blocking socket can be asked to try it without epoll having reported it ready:
	// it does what on_fd_ready would (one read attempt costs what the epoll_wait would)
	// and says whether anything arrived. `declined` (the default) means "only call me
	// when epoll reports the fd": the engine never asks again for this registration.
	enum class Poll { declined, idle, busy };
	virtual Poll poll_fd(int fd)
	{
		(void)fd;
		return Poll::declined;
	}

	// Whether poll_fd() now sees everything epoll would report for the fd (data, the
	// peer's end of stream, errors), so that a busy poller may take it out of the epoll
	// set (ProgressEngine::progress says when and why). Default: no.
	virtual bool may_leave_epoll() { return false; }
};

class ProgressEngine {
public:
	explicit ProgressEngine(Lock::Kind lock_kind = Lock::Kind::Mutex);
	~ProgressEngine();
	ProgressEngine(const ProgressEngine &) = delete;
	ProgressEngine &operator=(const ProgressEngine &) = delete;

	// The engine's epoll fd (-1 if creation failed; see valid()).
	int fd() const noexcept { return epoll_fd_; }
	bool valid() const noexcept { return epoll_fd_ >= 0; }
	Lock &lock() noexcept { return lock_; }

	// Return 0 or -FI_E*. 'handler' may be nullptr: the fd then only wakes blocked readers
	// and the progress sources do the work. An fd is registered at most once.
	int add_fd(int fd, uint32_t events, FdHandler *handler);
	int modify_fd(int fd, uint32_t events, FdHandler *handler);
	int remove_fd(int fd);
	// A lazy fd need not be looked at on every pass: a doorbell whose source reads the
	// memory it rings for on every pass anyway, or a liveness socket whose hangup may be
	// noticed a little late. While every registration is lazy, a busy pass skips
	// epoll_wait; epoll is still asked every kLazyEpollEvery passes, on the first pass
	// after request_epoll(), and by prepare_sleep() (so a sleeper never sleeps on a ready
	// fd). A lazy fd is never hot (not read directly on every pass either). Returns
	// -FI_ENOENT for an fd that is not registered.
	int set_lazy(int fd, bool lazy);
	static constexpr unsigned kLazyEpollEvery = 1024;
	// The next pass asks epoll whatever the fds' kinds (thread-safe; e.g. an enclosing
	// engine saw this engine's fd ready).
	void request_epoll() noexcept { epoll_requested_.store(true, std::memory_order_relaxed); }

	// An engine nested in this one (a fabric's engine holds its domains' engines): like
	// add_fd(fd, EPOLLIN, handler), but left out of leaf_fd().
	int add_nested_engine(int fd, FdHandler *handler);
	bool has_nested_engines() const noexcept { return nested_count_.load() > 0; }
	// An epoll set of this engine's fds without the nested engines, made on first use and
	// kept in step with add/modify/remove from then on (-FI_E* on failure). A waiter that
	// watches the nested engines by other means (rxm watches its core domain's engine
	// through the core CQ) sleeps one epoll level less deep on it than on fd().
	int leaf_fd();

	int add_source(ProgressSource *source);
	void remove_source(ProgressSource *source);
	bool has_sources() const noexcept { return source_count_.load() > 0; }

	// FI_GETWAIT without fi_trywait. fi_trywait(3) requires the call before sleeping on a
	// wait fd, but some applications poll the fd without it; a source that asks its peer
	// for a wake-up only in before_sleep() (a shared-memory ring) would then never wake
	// them. A Waitable that hands out an fd holding this engine counts it here; while one
	// is out and no fi_trywait has reached the engine, keep_armed() is true: such sources
	// arm on every pass (the peer rings for each message, as before lazy doorbells) and
	// every pass asks epoll (the doorbell is drained, so the fd goes quiet again). The
	// first fi_trywait ends it for good: that application sleeps only after fi_trywait.
	void note_wait_fd_exported() noexcept { exported_wait_fds_.fetch_add(1); }
	void note_wait_fd_released() noexcept { exported_wait_fds_.fetch_sub(1); }
	void note_trywait() noexcept
	{
		if (!trywait_seen_.load(std::memory_order_relaxed))
			trywait_seen_.store(true);
	}
	bool keep_armed() const noexcept
	{
		return exported_wait_fds_.load(std::memory_order_relaxed) > 0 &&
		       !trywait_seen_.load(std::memory_order_relaxed);
	}

	// One pass: dispatch ready fds, then run every source.
	// Busy-polling shortcut: the fds epoll last reported readable whose handlers accept
	// poll_fd (at most kHotFds, most recent first) are "hot". A pass tries them directly and
	// skips epoll_wait unless a hot fd had data on the previous pass (so a busy peer's
	// passes still look at every other fd), no fd is hot, or it is every kEpollEvery-th
	// pass (an idle fd waits at most that many passes). A hot fd that finds nothing on
	// kHotIdlePasses passes in a row, or whose registration stops asking for EPOLLIN,
	// cools down. A message then costs one read instead of epoll_wait + read.
	// The pass right after a busy one rests: it neither reads the hot fds nor asks epoll
	// (the pass after it does both). The busy pass read its sockets until they had no
	// more (or its budget ran out), microseconds ago; the call right after it is, in a reader that drains its CQ
	// until it finds nothing (Open MPI's ofi MTL), the one between a message and the
	// application's answer to it: a read and an epoll_wait there put two system calls
	// that find nothing on every message's turnaround. A spinning reader finds what came
	// meanwhile one pass later; a reader about to sleep still asks epoll (prepare_sleep:
	// the rest pass leaves probed_quiet_ unset). Only a pass within kRestWindow of the
	// busy one rests: a reader that calls once per longer stretch of other work must not
	// find its next message one call late, so resting delays nothing by more than that.
	// While every registered fd is lazy (set_lazy), epoll is asked only every
	// kLazyEpollEvery passes (or when requested): a pass then costs no system call.
	// A hot fd whose handler agrees (may_leave_epoll) leaves the epoll set once
	// kLeaveEpollAfter passes found data with no prepare_sleep() between: every packet
	// for a socket in an epoll set (nested in the fabric's) runs the set's wake-up
	// callbacks in the sender's system call, ~0.2-0.3 us per message on loopback, for a
	// poller that reads the socket on every pass anyway. It rejoins when it cools, is
	// modified, evicted from the hot list or removed, in prepare_sleep() (a sleeper must
	// be woken by it), while keep_armed(), and at the latest kLeaseMs after it left (a
	// timer fd in the set: a sleeper that never calls prepare_sleep, an EQ reader
	// watching fd(), or a second thread asleep while this one stops polling, is woken
	// by then and its pass puts the fd back).
	void progress();
	static constexpr size_t kHotFds = 4;
	static constexpr unsigned kEpollEvery = 8;
	static constexpr unsigned kHotIdlePasses = 4096;
	static constexpr std::chrono::microseconds kRestWindow{5};
	static constexpr unsigned kLeaveEpollAfter = 64;
	static constexpr int kLeaseMs = 10;
	// Tests: how many fds are out of the epoll set now.
	size_t fds_out_of_epoll() const noexcept { return out_count_; }
	// Tests: a window that a loaded machine cannot overrun (or 0: never rest).
	void set_rest_window(std::chrono::nanoseconds window) noexcept { rest_window_ = window; }

	// The step before sleeping on fd(): dispatches what epoll reports (a doorbell left
	// readable would wake the sleeper at once) unless the pass just before found epoll
	// empty or the last sleeper on fd() saw it quiet, or saw it fired for a reason a source
	// took care of (note_drained_by_source; sleep_report.h says why that is safe), then
	// runs every source's before_sleep().
	// True: sleep. False: a handler ran or a source has work: progress instead.
	bool prepare_sleep();
	// A source read one of its lazy fds itself (shm's endpoint its doorbell, when the ring
	// showed what the doorbell was for): what woke the last sleeper is handled, no probe
	// is needed for it. Engine lock held.
	void note_drained_by_source() noexcept { sleep_report::explain(epoll_fd_); }

	// Passes run so far, and whether a thread may be asleep on this engine (a
	// prepare_sleep() said "sleep" and no pass ran since). Read under the engine lock. A
	// provider may hold back work posted in the same pass as earlier work (tcp gathers a
	// burst of sends into one system call) and do it on the next pass or before_sleep(),
	// but not while a sleeper would not run either.
	uint64_t passes() const noexcept { return passes_; }
	bool sleeper_may_wait() const noexcept { return sleep_prepared_; }

	// Block until a registered fd is ready or timeout_ms passes (-1: forever). Does not
	// progress. Returns 1 when something is ready, 0 on timeout, -FI_E* on error.
	int wait(int timeout_ms);

	// FI_PROGRESS_AUTO: a thread running progress whenever an fd becomes ready and at
	// least every 'interval_ms' (for sources without fds). Stopped by stop_thread() or the
	// destructor.
	int start_thread(int interval_ms = 10);
	void stop_thread();
	bool thread_running() const noexcept { return thread_.joinable(); }

private:
	void thread_main(int interval_ms);

	struct Registration {
		int fd;
		FdHandler *handler;
		uint32_t events = 0;
		bool nested = false;
		bool lazy = false;
		bool no_poll = false;     // handler declined poll_fd
		unsigned idle_polls = 0;  // poll_fd calls in a row that found nothing
		bool out_of_epoll = false; // taken out of the set while hot (leave_epoll)
	};
	int add_registration(int fd, uint32_t events, FdHandler *handler, bool nested);
	// Mirrors an epoll_ctl into leaf_fd_ (engine lock held).
	void mirror(int op, const Registration &registration);
	// Returns the number of events dispatched.
	int dispatch_epoll();
	// Whether this pass asks epoll (engine lock held; `busy`: a hot fd had data).
	[[gnu::always_inline]] inline bool epoll_due(bool busy);
	// An engine with nested engines (a fabric's): the last sleeper saw leaf_fd() and every
	// nested engine's fd quiet (sleep_report.h), so epoll has nothing for this pass.
	// Consumes the leaf's report: the next pass without a sleep between asks epoll.
	bool sleepers_saw_quiet();
	// Polls the hot fds; true if any had data.
	bool poll_hot();
	void make_hot(Registration *registration);
	void cool(Registration *registration);
	// A busy hot fd out of the epoll set and back (engine lock held; see progress()).
	void maybe_leave_epoll(Registration *registration);
	void rejoin_epoll(Registration *registration);
	bool rejoin_all(); // true if any rejoined

	Lock lock_;
	int epoll_fd_ = -1;
	int leaf_fd_ = -1;
	std::atomic<size_t> nested_count_{0};
	std::unordered_map<int, std::unique_ptr<Registration>> registrations_;
	// Registrations removed during a pass stay alive until the outermost pass ends.
	std::vector<std::unique_ptr<Registration>> retired_;
	int depth_ = 0;
	Registration *hot_[kHotFds] = {};
	size_t hot_count_ = 0;
	unsigned pass_ = 0;
	uint64_t passes_ = 0;
	bool sleep_prepared_ = false;
	bool hot_was_busy_ = false;
	bool rest_ = false;          // the next pass rests (this one's hot fd had data)...
	std::chrono::steady_clock::time_point busy_at_{}; // ...if within rest_window_ of this
	std::chrono::nanoseconds rest_window_ = kRestWindow;
	size_t eager_count_ = 0;     // registrations that are not lazy
	unsigned lazy_passes_ = 0;   // passes since epoll was last asked, all fds lazy
	std::atomic<bool> epoll_requested_{false};
	// The last pass asked epoll, nothing was ready and no hot fd had data (prepare_sleep).
	bool probed_quiet_ = false;
	std::atomic<int> exported_wait_fds_{0};  // see keep_armed()
	std::atomic<bool> trywait_seen_{false};
	int stop_fd_ = -1;  // eventfd that wakes the auto-progress thread for shutdown
	int lease_fd_ = -1; // timer fd bounding how long an fd stays out of the set
	size_t out_count_ = 0;          // registrations out of the epoll set
	unsigned busy_since_sleep_ = 0; // passes with data since the last prepare_sleep
	std::atomic<bool> stopping_{false};
	std::vector<ProgressSource *> sources_;
	std::atomic<size_t> source_count_{0};
	std::thread thread_;
};

} // namespace util

#endif
