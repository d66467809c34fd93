// WaitSpin: how long a blocking read (fi_cq_sread, fi_cntr_wait, fi_eq_sread) polls before
// it sleeps.
//
// Waking a sleeping thread costs 10-30 us on a virtual machine (the idle vCPU halts and
// needs an interrupt), several times a same-host or loopback round trip (1-8 us): a 64 B
// same-host ping-pong with fi_cq_sread took 31 us per half round trip, busy-polling 0.8.
// So a blocking read first polls, for up to a budget, and the budget adapts to the
// traffic: a read satisfied while polling doubles it back towards the maximum; a read that
// had to sleep halves it, unless it woke sooner than the maximum would have polled (then
// polling would have caught it: back to the maximum). A ping-pong never sleeps; sparse
// traffic soon polls for nothing, so an idle reader sleeps at once and uses no CPU.
// FI_WAIT_SPIN_USEC (fabric(7)) sets the maximum (default 50); 0 turns polling off.
// Read when the object is opened, so a program may set it before opening its CQs.
#ifndef OFI_PROV_UTIL_WAIT_SPIN_H
#define OFI_PROV_UTIL_WAIT_SPIN_H

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>

namespace util {

class WaitSpin {
public:
	using Clock = std::chrono::steady_clock;
	static constexpr int64_t kDefaultMaxUsec = 50;

	WaitSpin() : max_ns_(max_from_env()), budget_ns_(max_ns_) {}

	// Until when a read that started at 'start' polls before it sleeps.
	Clock::time_point until(Clock::time_point start) const
	{
		return start + std::chrono::nanoseconds(budget_ns_.load(std::memory_order_relaxed));
	}
	bool enabled() const { return max_ns_ > 0; }
	// The read found something while polling.
	void caught()
	{
		int64_t b = budget_ns_.load(std::memory_order_relaxed);
		budget_ns_.store(b >= max_ns_ / 2 ? max_ns_ : 2 * b + kStepNs,
				 std::memory_order_relaxed);
	}
	// The read slept; waited: from its start until it woke.
	void slept(Clock::duration waited)
	{
		int64_t w = std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count();
		int64_t b = budget_ns_.load(std::memory_order_relaxed);
		budget_ns_.store(w < max_ns_ ? max_ns_ : b / 2, std::memory_order_relaxed);
	}

private:
	static constexpr int64_t kStepNs = 1000;
	static int64_t max_from_env()
	{
		const char *text = std::getenv("FI_WAIT_SPIN_USEC");
		if (!text || !*text)
			return kDefaultMaxUsec * 1000;
		char *end = nullptr;
		long long usec = std::strtoll(text, &end, 10);
		if (*end || usec < 0)
			return kDefaultMaxUsec * 1000; // not a number: the default, as for other knobs
		return std::min<long long>(usec, 1000000) * 1000;
	}

	const int64_t max_ns_;
	std::atomic<int64_t> budget_ns_;
};

} // namespace util

#endif
