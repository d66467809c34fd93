// RxmCntr: completion counters of rxm endpoints. Like RxmCq, reading or waiting on a counter
// drives the progress of the endpoints bound to it.
#ifndef OFI_PROV_RXM_CNTR_H
#define OFI_PROV_RXM_CNTR_H

#include "prov/util/fid_object.h"

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <mutex>
#include <vector>

namespace rxm {

class RxmDomain;
class RxmEndpoint;

class RxmCntr : public util::FidStorage<fid_cntr>, public util::FidObject {
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

	void attach(RxmEndpoint *ep);
	void detach(RxmEndpoint *ep);
	void increment() { value_.fetch_add(1, std::memory_order_acq_rel); }
	void increment_error() { errors_.fetch_add(1, std::memory_order_acq_rel); }

private:
	RxmCntr(RxmDomain *domain, void *context);
	void progress();

	RxmDomain *domain_;
	std::atomic<uint64_t> value_{0};
	std::atomic<uint64_t> errors_{0};
	std::mutex eps_lock_;
	std::vector<RxmEndpoint *> eps_;
};

} // namespace rxm

#endif
