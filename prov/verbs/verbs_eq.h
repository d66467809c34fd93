// An event queue on an rdma_cm event channel: a util::EventQueue (queue, fi_eq_write,
// FI_PEEK, error entries sized by API version, blocking reads, FI_GETWAIT) that verbs fills
// from the channel. CM events are processed when the app reads or waits on the EQ
// (connection management progresses with the app's EQ calls); only the ones the app must
// see become entries (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN, errors). The channel's fd and
// a timer for deferred answers are polled fds of util's Waitable.
#ifndef OFI_PROV_VERBS_EQ_H
#define OFI_PROV_VERBS_EQ_H

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include <rdma/fi_eq.h>
#include <rdma/rdma_cma.h>

#include "prov/util/event_queue.h"

namespace verbs {

class VerbsFabric;
class VerbsEventQueue;

// Whatever a CM id's context points at: a passive endpoint, a pending connection request
// or an endpoint. The EQ hands it the events of its ids.
class CmEventTarget {
public:
	virtual ~CmEventTarget() = default;
	// Called with the EQ locked, before the event is acked; must not destroy event->id.
	virtual void on_cm_event(const struct rdma_cm_event &event, VerbsEventQueue &eq) = 0;
	// For a target that put off its answer to an event (VerbsEventQueue::defer): called on
	// every EQ read and wait with the EQ locked; true once it has answered (it is then
	// forgotten). `now` is past deadline() when the wait is over.
	virtual bool settle_deferred(VerbsEventQueue &, std::chrono::steady_clock::time_point)
	{
		return true;
	}
	virtual std::chrono::steady_clock::time_point deadline() const { return {}; }
};

// Endpoints and passive endpoints bound to the EQ hold a reference (util::FidObject::ref):
// it cannot close under them.
class VerbsEventQueue : public util::EventQueue {
public:
	// Throws util::Error: -FI_ENOSYS for wait objects other than NONE, UNSPEC and FD (the
	// channel is the wait object), -FI_ENODEV without an rdma_cm channel.
	VerbsEventQueue(VerbsFabric &fabric, const struct fi_eq_attr &attr, void *context);
	~VerbsEventQueue() override;

	struct rdma_event_channel *channel() const { return channel_.get(); }

	// fi_trywait: processes the CM events there are; -FI_EAGAIN when anything is queued.
	int trywait();
	// Processes the CM events there are (as a read does), without taking an entry.
	void progress();

	// For CM handlers (EQ lock held): queue an fi_eq_cm_entry or an error entry.
	void push_cm_entry(uint32_t event, struct fid *fid, struct fi_info *info,
			   const std::vector<uint8_t> &data);
	void push_error(struct fid *fid, int err, int prov_errno, std::vector<uint8_t> err_data);
	// A target whose answer to an event waits (EQ lock held): asked again on every read
	// and wait until it settles; the wait fd becomes readable at its deadline.
	void defer(CmEventTarget *target);
	// A closing target is never asked again once this returns.
	void forget(CmEventTarget *target);

	// ---- util::Waitable: reads and waits progress the channel, not util's engines ----
	void run_progress() override { progress(); }

private:
	// How often a deferred disconnect answer is looked at again (arm_deferred_timer_locked).
	static constexpr std::chrono::milliseconds kDeferredRecheck{1};
	struct ChannelDeleter {
		void operator()(struct rdma_event_channel *channel) const;
	};
	// Owns the timer's fd, so a constructor that throws after creating it closes it.
	struct TimerFd {
		TimerFd();
		~TimerFd();
		TimerFd(const TimerFd &) = delete;
		TimerFd &operator=(const TimerFd &) = delete;
		int fd;
	};

	void process_cm_events_locked();
	void settle_deferred_locked();
	void arm_deferred_timer_locked();

	std::unique_ptr<struct rdma_event_channel, ChannelDeleter> channel_;
	TimerFd timer_;  // fires when a deferred target is due (arm_deferred_timer_locked)
	// Guards CM processing and the deferred targets; recursive because a target's handler
	// may call back into the EQ (defer, forget).
	std::recursive_mutex lock_;
	std::vector<CmEventTarget *> deferred_;
};

} // namespace verbs

#endif
