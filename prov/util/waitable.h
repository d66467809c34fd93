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
#ifndef OFI_PROV_UTIL_WAITABLE_H
#define OFI_PROV_UTIL_WAITABLE_H

#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>

namespace util {

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

	// The pollable fd (the epoll set); marks it exported so the eventfd is kept exact.
	int export_wait_fd();
	int wait_fd() const noexcept { return epoll_fd_; }
	bool wait_ok() const noexcept { return epoll_fd_ >= 0 && event_fd_ >= 0; }

	// Adds the fd of a progress engine (or any pollable fd) to the epoll set.
	int add_wait_source(int fd);
	void remove_wait_source(int fd);

	// Interrupts a blocked reader (fi_cq_signal): it returns -FI_EAGAIN.
	void interrupt();

	// fi_control for an object waiting with 'wait_obj': FI_GETWAIT hands out the pollable
	// fd, FI_GETWAITOBJ says its kind, anything else is -FI_ENOSYS. Callers hold whatever
	// lock their has_events() needs.
	int wait_control(int command, void *arg, enum fi_wait_obj wait_obj);

protected:
	// Derived classes call these with their own lock held.
	// After adding an event: set the eventfd if someone can observe it.
	void note_event_added();
	// After the object became empty: clear the eventfd.
	void note_drained();
	// At the start of a read: the owner is not asleep on an exported fd any more.
	void note_read() noexcept { armed_.store(false, std::memory_order_relaxed); }

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

	// Loop used by sread-style calls: repeatedly try 'attempt' (which returns -FI_EAGAIN
	// when nothing is ready), blocking between tries, until success/error/timeout.
	template <class Attempt, class Lockable>
	auto wait_loop(Lockable &lock, int timeout_ms, Attempt attempt) -> decltype(attempt());

public:
	// Wait sets also observe the eventfd.
	void set_observed_by_wait_set(bool on);

private:
	bool observed() const noexcept;
	void set_event_fd();
	void clear_event_fd();

	int event_fd_ = -1;
	int epoll_fd_ = -1;
	std::atomic<bool> event_fd_set_{false};
	std::atomic<int> waiters_{0};
	std::atomic<bool> exported_{false};
	std::atomic<bool> in_wait_set_{false};
	std::atomic<bool> interrupted_{false};
	std::atomic<bool> uses_trywait_{false}; // the exported fd's owner calls fi_trywait
	std::atomic<bool> armed_{false};        // a trywait allowed sleeping, no read since
};

template <class Attempt, class Lockable>
auto Waitable::wait_loop(Lockable &lock, int timeout_ms, Attempt attempt) -> decltype(attempt())
{
	bool infinite = timeout_ms < 0;
	Clock::time_point deadline = deadline_after(timeout_ms);
	for (;;) {
		auto result = attempt();  // runs progress and tries to read
		if (result != -FI_EAGAIN)
			return result;
		if (take_interrupt())
			return -FI_EAGAIN;
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
