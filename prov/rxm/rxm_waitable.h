// RxmWaitable: what rxm's CQs and counters add to util::Waitable. Their epoll sets hold the
// wait fds of the cores behind the bound endpoints; a core that has no wait fd cannot wake a
// sleeper, so while such an endpoint is bound, blocked callers look at it every millisecond.
#ifndef OFI_PROV_RXM_WAITABLE_H
#define OFI_PROV_RXM_WAITABLE_H

#include "prov/util/waitable.h"

#include <algorithm>
#include <atomic>

namespace rxm {

class RxmWaitable : public util::Waitable {
public:
	void add_polled_source() { polled_sources_.fetch_add(1); }
	void remove_polled_source() { polled_sources_.fetch_sub(1); }

protected:
	// block_until, shortened to 1 ms while a polled source is bound.
	int block_polled(Clock::time_point deadline, bool infinite)
	{
		if (polled_sources_.load() == 0)
			return block_until(deadline, infinite);
		Clock::time_point soon = Clock::now() + std::chrono::milliseconds(1);
		return block_until(infinite ? soon : std::min(deadline, soon), false);
	}

private:
	std::atomic<int> polled_sources_{0};
};

} // namespace rxm

#endif
