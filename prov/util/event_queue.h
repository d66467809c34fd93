// util::EventQueue: fi_eq_* for every provider.
//
// Events are kept in arrival order (a deque: the EQ is on the control path, so copying
// entries is fine). Connection events (FI_CONNREQ, FI_CONNECTED, FI_SHUTDOWN) are written
// with write_cm(): a struct fi_eq_cm_entry followed by the peer's CM data; for FI_CONNREQ
// the fi_info (with its 'handle' set by the provider) is handed to the application, which
// frees it — an EQ closed with unread connection requests frees them itself.
// Error events carry err_data, valid until the next read.
// Reads progress the fabric (fabric.progress_all()) so connection management moves even if
// the app only waits on its EQ.
#ifndef OFI_PROV_UTIL_EVENT_QUEUE_H
#define OFI_PROV_UTIL_EVENT_QUEUE_H

#include "prov/util/fabric.h"
#include "prov/util/fid_object.h"
#include "prov/util/lock.h"
#include "prov/util/ops_tables.h"
#include "prov/util/waitable.h"

#include <rdma/fi_eq.h>

#include <deque>
#include <functional>
#include <vector>

namespace util {

class EventQueue : public FidStorage<fid_eq>, public FidObject, public Waitable {
public:
	Waitable *waitable() noexcept override { return this; }
	static constexpr size_t kDefaultSize = 256;

	EventQueue(Fabric &fabric, const struct fi_eq_attr *attr, void *context);
	~EventQueue() override;

	struct fid_eq *eq_fid() noexcept { return &embedded_fid.pub; }
	Fabric &fabric() noexcept { return fabric_; }

	// ---- provider side (never fail silently: return 0 or -FI_E*) ----
	// Any event with a plain entry (e.g. FI_AV_COMPLETE/FI_MR_COMPLETE with fi_eq_entry).
	int write_event(uint32_t event, const void *entry, size_t len);
	// Connection events: fi_eq_cm_entry{fid, info} + cm_data. Takes ownership of 'info'
	// (may be NULL for FI_CONNECTED/FI_SHUTDOWN), also on failure.
	int write_cm(uint32_t event, struct fid *fid, struct fi_info *info, const void *cm_data,
		     size_t cm_data_len);
	// An error event; err_data is copied.
	int write_error(struct fid *fid, void *context, uint64_t data, int err, int prov_errno,
			const void *err_data = nullptr, size_t err_data_size = 0);

	// Drops the events (errors included) that name `fid`: an endpoint being closed calls it
	// so no event referencing the closed object is read later (the memory of a closed fid
	// may be a new endpoint's by then). Returns how many were dropped. `on_info` sees the
	// fi_info of each dropped connection event (e.g. FI_CONNREQ) before it is freed.
	size_t discard_events_of(const struct fid *fid,
				 const std::function<void(struct fi_info *)> &on_info = {});

	// ---- fi_ops_eq ----
	ssize_t read(uint32_t *event, void *buf, size_t len, uint64_t flags);
	ssize_t readerr(struct fi_eq_err_entry *buf, uint64_t flags);
	ssize_t write(uint32_t event, const void *buf, size_t len, uint64_t flags);
	ssize_t sread(uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags);
	const char *strerror(int prov_errno, const void *err_data, char *buf, size_t len);

	// ---- fi_ops ----
	int control(int command, void *arg);  // FI_GETWAIT, FI_GETWAITOBJ
	int close() override;

	// ---- Waitable ----
	void run_progress() override;
	bool has_events() override;

private:
	struct Event {
		uint32_t event = 0;
		bool is_error = false;
		std::vector<uint8_t> bytes;      // the entry as returned by fi_eq_read
		struct fi_info *owned_info = nullptr;  // FI_CONNREQ info not yet handed out
		struct fi_eq_err_entry error{};
		std::vector<uint8_t> err_data;
	};

	int push(Event &&event);
	ssize_t read_locked(uint32_t *event, void *buf, size_t len, uint64_t flags);

	Fabric &fabric_;
	enum fi_wait_obj wait_obj_;
	size_t size_;
	Lock lock_;
	std::deque<Event> events_;
	std::vector<uint8_t> last_err_data_;
	struct fid_wait *wait_set_ = nullptr;
};

} // namespace util

#endif
