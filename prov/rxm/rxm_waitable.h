// RxmWaitable: what rxm's CQs and counters add to util::Waitable: the list of bound
// endpoints whose progress they drive, and the core fds a blocked reader sleeps on.
//
// A blocked reader must wake up when the cores behind the bound endpoints have something:
// their wait fds (core CQ, core EQ, connection timer) are polled together with this object's
// own fd. They are kept in a list, not in this object's epoll set: Linux refuses to let one
// fd be watched through too many nested epoll sets, and nesting every endpoint's core fds in
// every CQ's set stopped working after a few dozen FI_WAIT_FD CQs per domain. Only when the
// application takes the fd (FI_GETWAIT), which must become readable by itself, do the core
// fds go into the epoll set. A core that has no wait fd cannot wake a sleeper, so while such
// an endpoint is bound, blocked callers look at it every millisecond.
#ifndef OFI_PROV_RXM_WAITABLE_H
#define OFI_PROV_RXM_WAITABLE_H

#include "prov/util/waitable.h"

#include <rdma/fi_eq.h>

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <vector>

namespace rxm {

class RxmEndpoint;

class RxmWaitable : public util::Waitable {
public:
	// The endpoints bound to this CQ or counter, whose progress it drives.
	void add_bound_ep(RxmEndpoint *ep)
	{
		std::lock_guard guard(eps_lock_);
		eps_.push_back(ep);
	}
	// False when ep was not bound.
	bool remove_bound_ep(RxmEndpoint *ep)
	{
		std::lock_guard guard(eps_lock_);
		auto it = std::find(eps_.begin(), eps_.end(), ep);
		if (it == eps_.end())
			return false;
		eps_.erase(it);
		return true;
	}
	// A copy, so that an endpoint may detach itself while progressing (closing a connection).
	std::vector<RxmEndpoint *> bound_eps()
	{
		std::lock_guard guard(eps_lock_);
		return eps_;
	}
	// Calls f on a copy of the list, like bound_eps(), without allocating for up to 8
	// endpoints: this runs on every CQ read.
	template <class F> void for_each_bound_ep(F f)
	{
		RxmEndpoint *few[8];
		std::vector<RxmEndpoint *> many;
		RxmEndpoint **eps = few;
		size_t n;
		{
			std::lock_guard guard(eps_lock_);
			n = eps_.size();
			if (n <= 8) {
				std::copy(eps_.begin(), eps_.end(), few);
			} else {
				many = eps_;
				eps = many.data();
			}
		}
		for (size_t i = 0; i < n; i++)
			f(eps[i]);
	}

	void add_polled_source() { polled_sources_.fetch_add(1); }
	void remove_polled_source() { polled_sources_.fetch_sub(1); }

	void add_core_fd(int fd)
	{
		if (fd < 0)
			return;
		std::lock_guard guard(core_fds_lock_);
		core_fds_.push_back(fd);
		if (core_fds_exported_)
			add_wait_source(fd);
	}
	void remove_core_fd(int fd)
	{
		std::lock_guard guard(core_fds_lock_);
		auto it = std::find(core_fds_.begin(), core_fds_.end(), fd);
		if (it == core_fds_.end())
			return;
		core_fds_.erase(it);
		if (core_fds_exported_)
			remove_wait_source(fd);
	}

	// wait_control, with the core fds put into the epoll set before FI_GETWAIT hands it out.
	int rxm_wait_control(int command, void *arg, enum fi_wait_obj wait_obj)
	{
		if (command == FI_GETWAIT && wait_obj != FI_WAIT_NONE) {
			std::lock_guard guard(core_fds_lock_);
			if (!core_fds_exported_) {
				core_fds_exported_ = true;
				for (int fd : core_fds_)
					add_wait_source(fd);
			}
		}
		return wait_control(command, arg, wait_obj);
	}

protected:
	// Blocks until this object's fd or a core fd is readable, or the deadline (shortened to
	// 1 ms while a polled source is bound). 0: woken; -FI_EAGAIN: timed out.
	int block_polled(Clock::time_point deadline, bool infinite)
	{
		// fi_trywait on the cores first: it arms their fds (they then signal completions
		// added while we sleep) and says when something is already there.
		if (!cores_quiet())
			return 0;
		if (polled_sources_.load() > 0) {
			Clock::time_point soon = Clock::now() + std::chrono::milliseconds(1);
			deadline = infinite ? soon : std::min(deadline, soon);
			infinite = false;
		}
		std::vector<pollfd> fds;
		{
			std::lock_guard guard(core_fds_lock_);
			if (core_fds_exported_ || core_fds_.empty())
				fds.clear();
			else
				for (int fd : core_fds_)
					fds.push_back({fd, POLLIN, 0});
		}
		if (fds.empty()) // exported: the epoll set already holds the core fds
			return block_until(deadline, infinite);
		if (!wait_ok())
			return -FI_ENOSYS;
		fds.push_back({wait_fd(), POLLIN, 0});
		for (;;) {
			int timeout;
			if (!timeout_left(deadline, infinite, &timeout))
				return -FI_EAGAIN;
			int n = poll(fds.data(), fds.size(), timeout);
			if (n > 0)
				return 0;
			if (n < 0 && errno != EINTR)
				return -errno;
		}
	}

	// fi_trywait on the core CQ and EQ of every bound endpoint: false when one has
	// something ready (then don't sleep).
	virtual bool cores_quiet() = 0;

private:
	std::mutex eps_lock_;
	std::vector<RxmEndpoint *> eps_;
	std::atomic<int> polled_sources_{0};
	std::mutex core_fds_lock_;
	std::vector<int> core_fds_;
	bool core_fds_exported_ = false;
};

} // namespace rxm

#endif
