// RxmCntr: util::Counter whose reads and waits drive the progress of the rxm endpoints
// bound to it; fi_cntr_wait sleeps on their cores' wait fds (util::Waitable's polled fds),
// after asking the cores whether it may (before_sleep).
#ifndef OFI_PROV_RXM_CNTR_H
#define OFI_PROV_RXM_CNTR_H

#include "prov/rxm/rxm_bound_eps.h"
#include "prov/util/counter.h"

namespace rxm {

class RxmDomain;
class RxmEndpoint;

class RxmCntr : public util::Counter {
public:
	// Throws util::Error for attributes util refuses.
	RxmCntr(RxmDomain &domain, const struct fi_cntr_attr *attr, void *context);

	void run_progress() override;
	bool before_sleep() override { return cores_may_sleep(eps_); }
	int control(int command, void *arg); // FI_GETWAIT: cores_wait_fd_handed_out
	int trywait_all();
	int layered_trywait() override { return trywait_all(); }  // wait sets arm our cores
	bool wants_wait_fd() const { return wait_obj() != FI_WAIT_NONE; }

	void attach(RxmEndpoint *ep);
	void detach(RxmEndpoint *ep);

private:
	BoundEndpoints eps_;
};

} // namespace rxm

#endif
