// What a sleeper saw of the progress engines it slept on, for the engines' next
// prepare_sleep() (ProgressEngine): whether the engine's epoll fd was readable when the
// sleeper woke up ("fired") or not ("quiet").
//
// Why: before sleeping, an engine dispatches what epoll reports, so that an fd left readable
// (a doorbell, a hung-up socket) is handled instead of waking the sleeper over and over. That
// probe costs an epoll_wait per sleep even when the fds are known quiet. A sleeper that
// watched the engine's fd knows better: if the fd was not readable when it woke, nothing
// became ready meanwhile that a later sleep would not see at once (level-triggered: a ready
// fd wakes the next sleeper immediately, which then reports it fired). So the next
// prepare_sleep() may skip its probe after a "quiet" report, and after a "fired" one whose
// cause a source took care of itself (shm's endpoint reading its own doorbell); it probes
// after "fired" otherwise, and when nobody reported (an application polling an FI_GETWAIT
// fd: its sleeps are not seen here). A fabric's engine skips the epoll_wait of a pass the
// same way when its own fds (leaf_fd) and its nested domain engines were all seen quiet by
// the last sleeper (rxm reads its core EQ, a fabric pass, after waking).
//
// Indexed by fd, because the sleeper may know the engine only as an fd: rxm watches its core
// domain's engine through the core CQ's wait sources (util::kGetWaitSources). A stale report
// (an fd closed and reused) costs at most one extra wake-up, for the reason above; engines
// clear their slot when created. fds beyond the table are never reported (always probed).
#ifndef OFI_PROV_UTIL_SLEEP_REPORT_H
#define OFI_PROV_UTIL_SLEEP_REPORT_H

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace util::sleep_report {

enum Report : uint8_t { none = 0, quiet = 1, fired = 2 };

inline constexpr size_t kFds = 1 << 14;

inline std::atomic<uint8_t> &slot(int fd)
{
	static std::atomic<uint8_t> reports[kFds];
	return reports[fd];
}

inline bool covered(int fd) { return fd >= 0 && static_cast<size_t>(fd) < kFds; }

// By a sleeper after it woke (or timed out): whether `fd` was readable.
inline void note(int fd, bool was_fired)
{
	if (covered(fd))
		slot(fd).store(was_fired ? fired : quiet, std::memory_order_relaxed);
}

// By the engine owning `fd`: what made it fire was handled by a source itself (shm's
// endpoint read the doorbell that woke the sleeper): as good as quiet.
inline void explain(int fd)
{
	uint8_t was = fired;
	if (covered(fd))
		slot(fd).compare_exchange_strong(was, quiet, std::memory_order_relaxed);
}

// By the engine owning `fd`: the last report since the previous take (none if nobody slept
// on it); take() clears it.
inline Report peek(int fd)
{
	return covered(fd) ? static_cast<Report>(slot(fd).load(std::memory_order_relaxed)) : none;
}

inline Report take(int fd)
{
	if (!covered(fd) || slot(fd).load(std::memory_order_relaxed) == none)
		return none;
	return static_cast<Report>(slot(fd).exchange(none, std::memory_order_relaxed));
}

} // namespace util::sleep_report

#endif
