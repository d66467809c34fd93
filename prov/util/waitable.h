// Blocking support shared by CQs, EQs and counters.
//
// Each waitable object owns an eventfd (set while it has something to report, or after
// signal()) and an epoll set containing that eventfd plus the fds of whatever progresses it
// (a domain's or fabric's ProgressEngine fd). The epoll fd is what FI_GETWAIT hands out: it
// becomes readable whenever a blocking read would make progress.
//
// The eventfd is only written while someone can observe it (a blocked reader, an exported
// fd, a wait set), so the common poll-only data path makes no extra system calls. An
// exported fd whose owner follows the fi_trywait protocol (it called fi_trywait at least
// once) is observed only between an fi_trywait that allowed sleeping and the owner's next
// read: events added while the owner is busy reading need no eventfd write and read (the
// engine fds in the set wake a sleeper for anything arriving on sockets anyway).
//
// Layered providers (rxm) add three things through hooks here rather than a copy:
// - polled fds (add_polled_fd): wait fds of lower objects (core CQ/EQ, timers). A blocked
//   reader poll()s them beside the epoll fd; they enter the epoll set only once that fd is
//   exported (FI_GETWAIT, a wait set), which must become readable by itself. Why: Linux
//   refuses epoll_ctl once one socket is watched through too many nested epoll sets (about
//   100 paths at depth 3), so nesting every core fd in every object's set broke at a few
//   dozen blocking CQs on one domain. Exporting adds no level: the exported fd holds the
//   polled fds directly, as it holds the engine fd.
// - before_sleep(): run right before sleeping, may veto it (rxm: fi_trywait on its cores,
//   which arms them and says when they already hold something).
// - fd-less sources (add_fdless_source): something progressed here that has no fd to wake
//   a sleeper (a core opened without wait objects); while one is attached, blocked callers
//   wake every kFdlessTickMs to look at it.
//
// Wait sources (kGetWaitSources, a util-private fi_control command): what the epoll fd is
// made of, for a layered provider of ours to watch directly. Nesting a core object's epoll
// fd in the layer's own set costs the application one of the 5 epoll levels Linux allows
// (issue 17 item 4: rxm's fd left it only 1); the layer watching our eventfd and engine fds
// directly costs none; from an engine that nests others (a fabric's, which holds its
// domains' engines) it gets the engine's leaf_fd() and must watch the nested engines it
// cares about by other means (rxm: its core domain's engine, a source of its core CQ).
// The caller promises the fi_trywait protocol (fi_trywait on this
// object before every sleep), so the eventfd is written only while armed by that trywait.
#ifndef OFI_PROV_UTIL_WAITABLE_H
#define OFI_PROV_UTIL_WAITABLE_H

#include "prov/util/progress_engine.h"
#include "prov/util/wait_spin.h"

#include <rdma/fi_eq.h>

#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <vector>

namespace util {

// fi_control command between our own providers (never given out by an application-visible
// call): fills a WaitSources with the fds to watch instead of the FI_GETWAIT fd. A foreign
// provider answers -FI_ENOSYS (or another error), and the caller falls back to FI_GETWAIT.
// The value sits far from libfabric's commands (small enum values) and its provider range.
inline constexpr int kGetWaitSources = 0x55570001;

struct WaitSources {
	static constexpr size_t kMax = 8;
	int fds[kMax];
	size_t count = 0;
};

class Waitable {
public:
	Waitable();
	virtual ~Waitable();
	Waitable(const Waitable &) = delete;
	Waitable &operator=(const Waitable &) = delete;

	// Runs the progress that can produce events for this object.
	virtual void run_progress() = 0;
	// True when a read would return something (entries or errors).
	virtual bool has_events() = 0;

	// fi_trywait: -FI_EAGAIN if anything is ready, else 0 (the app may block on
	// wait_fd(), which also holds the progress engines' fds: what arrives on a socket wakes
	// it without progressing here).
	int trywait();
	// fi_trywait as the object's provider answers it: a layered provider also asks (and so
	// arms) the objects below (rxm: its cores). Wait sets use this for their members.
	virtual int layered_trywait() { return trywait(); }

	// The pollable fd (the epoll set); marks it exported so the eventfd is kept exact.
	int export_wait_fd();
	int wait_fd() const noexcept { return epoll_fd_; }
	// Whether export_wait_fd handed the fd out (FI_GETWAIT): its holder may poll it without
	// fi_trywait. A layered provider hands out its lower objects' fds then too.
	bool wait_fd_handed_out() const noexcept { return engines_told_export_.load(); }
	bool wait_ok() const noexcept { return epoll_fd_ >= 0 && event_fd_ >= 0; }

	// Adds the fd of a progress engine (or any pollable fd) to the epoll set. Sources
	// belong to the object's construction: one added after export_wait_sources would not
	// reach the holder of the list (-FI_EBUSY then).
	int add_wait_source(int fd);
	void remove_wait_source(int fd);
	// A progress engine as a wait source: export_wait_sources gives its leaf_fd() when it
	// holds nested engines (a fabric's), which the holder watches by other means.
	int add_wait_source(ProgressEngine &engine);
	// An fd the epoll set holds without it being a wait source: blocked readers and the
	// FI_GETWAIT fd wake on it, kGetWaitSources leaves it out (its holder watches it by
	// other means). EQs watch each domain engine of their fabric this way, directly rather
	// than through the fabric engine, which saves the application one epoll level.
	int watch_fd(int fd) { return epoll_add(fd); }
	void unwatch_fd(int fd) { epoll_del(fd); }

	// kGetWaitSources: the eventfd and the wait sources; the object then keeps its eventfd
	// exact for a holder that follows the fi_trywait protocol. -FI_ENOSYS when the object
	// cannot be watched that way (no wait object, polled fds or fd-less sources of its own:
	// the caller then uses FI_GETWAIT).
	int export_wait_sources(WaitSources *out);

	// Polled fds (see the top): -FI_EINVAL for a bad fd. An fd may be added more than once
	// (it stays until removed as often); removing an fd that is not there does nothing.
	int add_polled_fd(int fd);
	void remove_polled_fd(int fd);
	size_t polled_fd_count() const noexcept { return polled_count_.load(); }
	// Sources without a wait fd: blocked callers wake every kFdlessTickMs while any is on.
	static constexpr int kFdlessTickMs = 1;
	void add_fdless_source() noexcept { fdless_sources_.fetch_add(1); }
	void remove_fdless_source() noexcept { fdless_sources_.fetch_sub(1); }

	// Interrupts a blocked reader (fi_cq_signal): it returns -FI_EAGAIN.
	void interrupt();

	// fi_control for an object waiting with 'wait_obj': FI_GETWAIT hands out the pollable
	// fd, FI_GETWAITOBJ says its kind, anything else is -FI_ENOSYS. Callers hold whatever
	// lock their has_events() needs.
	int wait_control(int command, void *arg, enum fi_wait_obj wait_obj);

protected:
	// Derived classes call these with their own lock held.
	// After adding an event: set the eventfd if someone can observe it. Inline: every
	// completion written comes here, and nearly always nobody observes.
	void note_event_added()
	{
		if (!event_fd_set_ && observed())
			set_event_fd();
	}
	// Whether note_event_added would write the eventfd now (a caller that must not call
	// out while holding its lock checks first and takes its general path then).
	bool event_fd_due() const noexcept { return !event_fd_set_ && observed(); }
	// After the object became empty: clear the eventfd.
	void note_drained();
	// At the start of a read: the owner is not asleep on an exported fd any more.
	void note_read() noexcept { armed_.store(false, std::memory_order_relaxed); }
	// The eventfd may be readable: only a locked drain (note_drained) clears it.
	bool event_fd_set() const noexcept { return event_fd_set_.load(std::memory_order_relaxed); }

	// Blocks until an event, an interrupt or the deadline. Returns 0 when woken (caller
	// re-checks), -FI_EAGAIN on timeout or interrupt. Callers must register as a waiter
	// first (begin_wait) under their lock and check has_events() after that.
	using Clock = std::chrono::steady_clock;
	static Clock::time_point deadline_after(int timeout_ms);
	// The poll/epoll timeout left until 'deadline' (-1 when infinite); false once it passed.
	static bool timeout_left(Clock::time_point deadline, bool infinite, int *timeout_ms);
	int block_until(Clock::time_point deadline, bool infinite);
	void begin_wait() noexcept { waiters_.fetch_add(1); }
	void end_wait() noexcept { waiters_.fetch_sub(1); }
	bool take_interrupt() noexcept { return interrupted_.exchange(false); }

	// Run right before block_until sleeps: false means "don't sleep" (block_until returns 0
	// and the caller re-checks). Default: always sleep. The engines added as wait sources
	// get their prepare_sleep() first (their sources arm wake-ups there), here and in
	// trywait().
	virtual bool before_sleep() { return true; }

	// Loop used by sread-style calls: repeatedly try 'attempt' (which returns -FI_EAGAIN
	// when nothing is ready), blocking between tries, until success/error/timeout.
	template <class Attempt, class Lockable>
	auto wait_loop(Lockable &lock, int timeout_ms, Attempt attempt) -> decltype(attempt());

public:
	// Wait sets also observe the eventfd.
	void set_observed_by_wait_set(bool on);

private:
	// ProgressEngine::prepare_sleep() of each engine wait source; false: one vetoed.
	bool prepare_engines();
	// Calls fn(engine) for each engine wait source, under polled_lock_.
	template <class Fn>
	void for_each_engine(Fn fn);
	bool observed() const noexcept
	{
		if (waiters_.load() > 0 || in_wait_set_.load())
			return true;
		return exported_.load() && (!uses_trywait_.load() || armed_.load());
	}
	// Puts the polled fds into the epoll set, for good (the fd is out of our hands now).
	void export_polled_fds();
	// What one block_until sleeps on: the polled fds (unless exported) and the epoll fd,
	// copied so that they may change meanwhile; no allocation for a few.
	struct SleepFds {
		static constexpr size_t kFew = 16;
		pollfd few[kFew];
		std::vector<pollfd> many;
		pollfd *fds = few;
		size_t count = 0;  // 0: a plain epoll_wait on the epoll fd will do
		// The epoll fds of the engine wait sources, to report what they did
		// (sleep_report.h).
		int engines[WaitSources::kMax];
		size_t engine_count = 0;
	};
	void snapshot_polled(SleepFds &out);
	void snapshot_engines(SleepFds &out);
	// Events one sleep in epoll_wait takes: the eventfd and every wait source, and more.
	static constexpr int kSleepEvents = WaitSources::kMax + 8;
	// After a sleep: tells each engine watched whether its fd was readable (`own_fired`:
	// whether the epoll set holding the engine sources was; `ready`: the epoll_wait's
	// events, when the sleep was one).
	void report_sleep(const SleepFds &sleep, bool own_fired, const epoll_event *ready,
			  int ready_count);
	int epoll_add(int fd);
	void epoll_del(int fd);
	void set_event_fd();
	void clear_event_fd();

	WaitSpin spin_;  // how long wait_loop polls before it sleeps
	int event_fd_ = -1;
	int epoll_fd_ = -1;
	std::atomic<bool> event_fd_set_{false};
	std::atomic<int> waiters_{0};
	std::atomic<bool> exported_{false};
	std::atomic<bool> in_wait_set_{false};
	std::atomic<bool> interrupted_{false};
	std::atomic<bool> uses_trywait_{false}; // the exported fd's owner calls fi_trywait
	std::atomic<bool> armed_{false};        // a trywait allowed sleeping, no read since
	// The engine wait sources were told of the exported fd / of a first fi_trywait
	// (ProgressEngine::keep_armed).
	std::atomic<bool> engines_told_export_{false};
	std::atomic<bool> engines_told_trywait_{false};
	std::atomic<bool> export_wake_pending_{false}; // the eventfd set at export, not for an event
	std::mutex polled_lock_;  // guards polled_fds_, polled_exported_, sources_*
	std::vector<int> polled_fds_;
	bool polled_exported_ = false;
	struct Source {
		int fd;
		ProgressEngine *engine;  // when the fd is an engine's
	};
	std::vector<Source> sources_;  // add_wait_source's fds
	bool sources_exported_ = false;
	std::atomic<size_t> polled_count_{0};    // lets the common case skip the lock
	std::atomic<int> fdless_sources_{0};
};

template <class Attempt, class Lockable>
auto Waitable::wait_loop(Lockable &lock, int timeout_ms, Attempt attempt) -> decltype(attempt())
{
	bool infinite = timeout_ms < 0;
	Clock::time_point deadline = deadline_after(timeout_ms);
	// Poll first, for as long as spin_ allows (wait_spin.h), then sleep.
	Clock::time_point start{}, poll_until{};
	if (spin_.enabled()) {
		start = Clock::now();
		poll_until = spin_.until(start);
		if (!infinite && deadline < poll_until)
			poll_until = deadline;
	}
	bool polled = false, slept = false;
	for (;;) {
		auto result = attempt();  // runs progress and tries to read
		if (result != -FI_EAGAIN) {
			if (polled && !slept)
				spin_.caught();
			return result;
		}
		if (take_interrupt())
			return -FI_EAGAIN;
		if (!slept && spin_.enabled() && Clock::now() < poll_until) {
			// On a busy machine the peer we wait for may need this CPU.
			sched_yield();
			polled = true;
			continue;
		}
		lock.lock();
		begin_wait();
		bool ready = has_events();
		lock.unlock();
		if (ready) {
			end_wait();
			continue;
		}
		int rc = block_until(deadline, infinite);
		end_wait();
		if (!slept && spin_.enabled()) {
			slept = true;
			spin_.slept(Clock::now() - start);
		}
		if (rc == -FI_EAGAIN) {
			// One last try: progress may have produced something just now.
			result = attempt();
			if (result == -FI_EAGAIN)
				take_interrupt();
			return result;
		}
		if (rc < 0)
			return rc;
	}
}

} // namespace util

#endif
