// util::Counter: fi_cntr_* for every provider. Providers bump it with increment() /
// increment_error() (the util::Endpoint helpers do that for bound counters). Reads and
// waits progress the domain first (manual progress).
#ifndef OFI_PROV_UTIL_COUNTER_H
#define OFI_PROV_UTIL_COUNTER_H

#include "prov/util/domain.h"
#include "prov/util/fid_object.h"
#include "prov/util/lock.h"
#include "prov/util/ops_tables.h"
#include "prov/util/waitable.h"

#include <rdma/fi_eq.h>

#include <atomic>

namespace util {

class Counter : public FidStorage<fid_cntr>, public FidObject, public Waitable {
public:
	Waitable *waitable() noexcept override { return this; }
	Counter(Domain &domain, const struct fi_cntr_attr *attr, void *context);
	~Counter() override;

	struct fid_cntr *cntr_fid() noexcept { return &embedded_fid.pub; }
	Domain &domain() noexcept { return domain_; }
	enum fi_wait_obj wait_obj() const noexcept { return wait_obj_; }

	// ---- provider side ----
	void increment(uint64_t n = 1);
	void increment_error(uint64_t n = 1);
	// True (once) when the value or error count changed since last observed (fi_poll).
	bool take_change();

	// ---- fi_ops_cntr ----
	uint64_t read();
	uint64_t readerr();
	int add(uint64_t value);
	int set(uint64_t value);
	int adderr(uint64_t value);
	int seterr(uint64_t value);
	// Returns 0 once value >= threshold, -FI_ETIMEDOUT on timeout, -FI_EAVAIL if the error
	// count changed while waiting.
	int wait(uint64_t threshold, int timeout);

	// ---- fi_ops ----
	int control(int command, void *arg);
	int close() override;

	// ---- Waitable ----
	void run_progress() override;
	bool has_events() override;

private:
	void changed();

	Domain &domain_;
	enum fi_wait_obj wait_obj_;
	Lock lock_;
	std::atomic<uint64_t> value_{0};
	std::atomic<uint64_t> errors_{0};
	// Value last seen by a reader: "has_events" means it changed since then (fi_poll,
	// wait fd readiness).
	uint64_t seen_value_ = 0;
	uint64_t seen_errors_ = 0;
	struct fid_wait *wait_set_ = nullptr;
};

} // namespace util

#endif
