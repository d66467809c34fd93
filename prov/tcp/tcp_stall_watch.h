// StallWatch: the endpoints of one domain whose stream stopped mid-frame (DESIGN: a stalled
// peer costs the others nothing, no wait without a timeout).
//
// A peer that sends a message's header and part of its payload and then goes silent holds
// the receive being filled (an application's own, or through ofi_rxm's direct receive the
// application's receive matched at the header), and with it everything queued behind it.
// FI_TCP_RX_STALL_TIMEOUT bounds that: a connection mid-frame that receives no byte for that
// long, with nothing waiting in its socket, is failed (FI_ETIMEDOUT on the receive being
// filled, FI_SHUTDOWN).
//
// Nothing is timed on the data path: an endpoint that ends a progress call mid-frame joins
// this list (once; a flag test per call), and a timer fd of the domain's engine, armed only
// while the list is not empty, sweeps it every quarter of the timeout. A sweep compares
// each member's count of socket reads with the one it saw last: a stream that moved, or no
// longer sits mid-frame, is fine (and leaves the list when it is no longer mid-frame); one
// that did not move for the timeout is asked to fail. The member checks its socket first:
// bytes waiting there mean the application did not progress, not that the peer stalled.
// The timer fd is lazy in the engine (a busy poller asks epoll about it every
// kLazyEpollEvery passes; a sleeper sees it fire), so a busy pass pays nothing for it.
// Everything runs under the domain (engine) lock.
#ifndef PROV_TCP_TCP_STALL_WATCH_H
#define PROV_TCP_TCP_STALL_WATCH_H

#include "prov/tcp/tcp_member_list.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/util/progress_engine.h"

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cstdint>
#include <ctime>

namespace tcp {

class StallWatch : public util::FdHandler {
public:
	class Member : public MemberLinks<Member> {
	public:
		// Whether the stream still sits mid-frame (else it leaves the list).
		virtual bool stall_mid_frame() const = 0;
		// Socket reads that returned bytes so far (any monotonic count of progress).
		virtual uint64_t stall_reads() const = 0;
		// Stalled for the timeout: fail the stream unless bytes wait in the socket.
		// True when it was failed.
		virtual bool stall_expired() = 0;

	protected:
		~Member() = default;

	private:
		friend class StallWatch;
		uint64_t seen_reads_ = 0;
		uint64_t still_since_ms_ = 0; // 0: not seen still yet
	};

	// timeout_ms 0: no watch (watch() does nothing). The timer fd is made here, with the
	// domain, not when a stream first stalls: a process's fds stay as they were once the
	// stallers are gone (test/adversarial/srx_stall_test counts them).
	StallWatch(util::ProgressEngine &engine, uint64_t timeout_ms)
	    : engine_(engine), timeout_ms_(timeout_ms)
	{
		if (!timeout_ms_)
			return;
		timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (timer_fd_ >= 0 && engine_.add_fd(timer_fd_, EPOLLIN, this) != 0) {
			::close(timer_fd_);
			timer_fd_ = -1;
		}
		if (timer_fd_ < 0) {
			FI_WARN(&provider, FI_LOG_DOMAIN,
				"no timer for FI_TCP_RX_STALL_TIMEOUT: stalled peers are not timed\n");
			timeout_ms_ = 0;
			return;
		}
		engine_.set_lazy(timer_fd_, true);
	}
	~StallWatch() override
	{
		if (timer_fd_ >= 0) {
			engine_.remove_fd(timer_fd_);
			::close(timer_fd_);
		}
	}
	StallWatch(const StallWatch &) = delete;
	StallWatch &operator=(const StallWatch &) = delete;

	uint64_t timeout_ms() const { return timeout_ms_; }

	// The member ended a progress call mid-frame. Cheap when already listed.
	void watch(Member *m)
	{
		if (m->listed() || !timeout_ms_)
			return;
		if (!members_.front() && !arm(true))
			return; // the timer cannot run: no watch, as before it existed
		m->seen_reads_ = m->stall_reads();
		m->still_since_ms_ = 0;
		members_.push_front(m);
	}

	void remove(Member *m) { members_.remove(m); }

	void on_fd_ready(int fd, uint32_t) override
	{
		uint64_t expirations;
		while (::read(fd, &expirations, sizeof(expirations)) > 0) {
		}
		sweep(now_ms());
		if (!members_.front())
			arm(false);
	}

	// One pass over the list at time `now` (tests may call it directly).
	void sweep(uint64_t now)
	{
		Member *next = nullptr;
		for (Member *m = members_.front(); m; m = next) {
			next = MemberList<Member>::next(m);
			uint64_t reads = m->stall_reads();
			if (!m->stall_mid_frame()) {
				remove(m);
			} else if (reads != m->seen_reads_ || !m->still_since_ms_) {
				m->seen_reads_ = reads;
				m->still_since_ms_ = now ? now : 1;
			} else if (now - m->still_since_ms_ >= timeout_ms_) {
				remove(m); // (failing it may close and free nothing; listed no more)
				if (!m->stall_expired())
					watch_again(m, now);
			}
		}
	}

private:
	static uint64_t now_ms()
	{
		timespec ts{};
		clock_gettime(CLOCK_MONOTONIC, &ts);
		return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
	}

	// Bytes were waiting: the clock starts again from now.
	void watch_again(Member *m, uint64_t now)
	{
		watch(m);
		m->still_since_ms_ = now ? now : 1;
	}

	// Starts (periodic, a quarter of the timeout) or stops the timer; false if it cannot run.
	bool arm(bool on)
	{
		if (timer_fd_ < 0)
			return !on;
		uint64_t period_ms = on ? (timeout_ms_ / 4 ? timeout_ms_ / 4 : 1) : 0;
		itimerspec spec{};
		spec.it_value.tv_sec = static_cast<time_t>(period_ms / 1000);
		spec.it_value.tv_nsec = static_cast<long>(period_ms % 1000) * 1000000;
		spec.it_interval = spec.it_value;
		return timerfd_settime(timer_fd_, 0, &spec, nullptr) == 0 || !on;
	}

	util::ProgressEngine &engine_;
	uint64_t timeout_ms_;
	int timer_fd_ = -1;
	MemberList<Member> members_;
};

} // namespace tcp

#endif
