// RxmCntr: completion counters of rxm endpoints. Like RxmCq, reading or waiting on a counter
// drives the progress of the endpoints bound to it. fi_cntr_wait sleeps on the cores' wait
// fds (RxmWaitable); the FI_GETWAIT fd becomes readable when the counter changed since it
// was last read.
#ifndef OFI_PROV_RXM_CNTR_H
#define OFI_PROV_RXM_CNTR_H

#include "prov/util/fid_object.h"
#include "prov/rxm/rxm_waitable.h"

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace rxm {

class RxmDomain;
class RxmEndpoint;

class RxmCntr : public util::FidStorage<fid_cntr>, public util::FidObject,
		public RxmWaitable {
public:
	static int open(RxmDomain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
			void *context);
	int close() override;
	struct fid_cntr *pub() { return &embedded_fid.pub; }

	uint64_t read();
	uint64_t readerr();
	int add(uint64_t value);
	int set(uint64_t value);
	int adderr(uint64_t value);
	int seterr(uint64_t value);
	int wait(uint64_t threshold, int timeout);
	int control(int command, void *arg);  // FI_GETWAIT, FI_GETWAITOBJ

	// util::Waitable: "has events" means changed since the last read.
	void run_progress() override { progress(); }
	bool has_events() override { return changed_.load(std::memory_order_acquire); }
	bool cores_quiet() override;
	int trywait_all();
	bool wants_wait_fd() const { return wait_obj_ != FI_WAIT_NONE; }

	void attach(RxmEndpoint *ep);
	void detach(RxmEndpoint *ep);
	void increment() { value_.fetch_add(1, std::memory_order_acq_rel); changed(); }
	void increment_error() { errors_.fetch_add(1, std::memory_order_acq_rel); changed(); }

private:
	RxmCntr(RxmDomain *domain, enum fi_wait_obj wait_obj, void *context);
	void progress();
	void changed();
	void seen();

	RxmDomain *domain_;
	std::atomic<uint64_t> value_{0};
	std::atomic<uint64_t> errors_{0};
	enum fi_wait_obj wait_obj_;
	std::mutex event_lock_;  // orders eventfd set/clear
	std::atomic<bool> changed_{false};
};

} // namespace rxm

#endif
