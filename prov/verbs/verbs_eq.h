// An event queue on an rdma_cm event channel. CM events are processed when the app reads
// or waits on the EQ (connection management progresses with the app's EQ calls); only
// the ones the app must see become entries (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN, errors).
#ifndef OFI_PROV_VERBS_EQ_H
#define OFI_PROV_VERBS_EQ_H

#include <chrono>
#include <deque>
#include <mutex>
#include <vector>

#include <rdma/fi_eq.h>
#include <rdma/rdma_cma.h>

#include "prov/util/fid_object.h"

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
class VerbsEventQueue : public util::FidStorage<fid_eq>, public util::FidObject {
public:
	static int open(VerbsFabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
			void *context);

	struct rdma_event_channel *channel() const { return channel_; }
	VerbsFabric *fabric() const { return fabric_; }

	int close() override;
	int control(int command, void *arg);
	ssize_t read(uint32_t *event, void *buf, size_t len, uint64_t flags);
	ssize_t readerr(struct fi_eq_err_entry *entry, uint64_t flags);
	ssize_t write(uint32_t event, const void *buf, size_t len, uint64_t flags);
	ssize_t sread(uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags);
	const char *strerror(int prov_errno, const void *err_data, char *buf, size_t len);
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

private:
	struct Entry {
		uint32_t event = 0;
		bool is_error = false;
		std::vector<uint8_t> bytes;       // what read() copies out
		struct fi_eq_err_entry err {};
		std::vector<uint8_t> err_data;
		struct fi_info *info = nullptr;   // FI_CONNREQ: owned until read
	};
	VerbsEventQueue(VerbsFabric *fabric, void *context);
	~VerbsEventQueue() override;
	void process_cm_events_locked();
	ssize_t read_locked(uint32_t *event, void *buf, size_t len, uint64_t flags);
	void update_ready_fd_locked();
	void settle_deferred_locked();
	void arm_deferred_timer_locked();

	VerbsFabric *fabric_;
	struct rdma_event_channel *channel_ = nullptr;
	int ready_fd_ = -1;   // eventfd, readable while entries are queued
	int wait_fd_ = -1;    // epoll over the channel fd, ready_fd_ and timer_fd_: the app's wait fd
	int timer_fd_ = -1;   // fires when a deferred target is due (arm_deferred_timer_locked)
	bool ready_signalled_ = false;
	std::recursive_mutex lock_;
	std::deque<Entry> entries_;
	std::vector<CmEventTarget *> deferred_;
	std::vector<uint8_t> last_err_data_; // err_data handed out by readerr
};

} // namespace verbs

#endif
