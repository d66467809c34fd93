// RxmCq: util::CompletionQueue plus what rxm adds. Completions are written by the rxm
// endpoints bound to it; reading it drives their progress (their core CQ and EQ), so an
// application that only polls its CQ moves data and establishes connections (manual
// progress). A read that the queued entries already fill returns them without progressing.
//
// Blocking (fi_cq_sread, FI_GETWAIT, fi_trywait) is util::Waitable's: the bound endpoints
// hand their core wait fds in as polled fds, cores without fds as fd-less sources, and
// before sleeping the reader asks the cores (fi_trywait) whether it may (before_sleep).
#ifndef OFI_PROV_RXM_CQ_H
#define OFI_PROV_RXM_CQ_H

#include "prov/rxm/rxm_bound_eps.h"
#include "prov/util/completion_queue.h"

namespace rxm {

class RxmDomain;
class RxmEndpoint;

class RxmCq final : public util::CompletionQueue {
public:
	// Throws util::Error for attributes util refuses.
	RxmCq(RxmDomain &domain, const struct fi_cq_attr *attr, void *context);

	// fi_ops_cq members that differ from util's.
	ssize_t read(void *buf, size_t count) { return readfrom(buf, count, nullptr); }
	ssize_t readfrom(void *buf, size_t count, fi_addr_t *src_addr);
	ssize_t readerr(struct fi_cq_err_entry *buf, uint64_t flags);
	int control(int command, void *arg); // FI_GETWAIT: cores_wait_fd_handed_out
	const char *strerror(int prov_errno, const void *err_data, char *buf, size_t len);

	// util::Waitable / util::CompletionQueue hooks.
	void run_progress() override;
	bool before_sleep() override { return cores_may_sleep(eps_); }
	void progress_for_read(size_t count) override;

	// fi_trywait on the rxm fabric: progress, then ask the cores whether blocking is safe.
	int trywait_all();
	int layered_trywait() override { return trywait_all(); }  // wait sets arm our cores
	bool wants_wait_fd() const { return wait_obj() != FI_WAIT_NONE; }

	// Endpoint side.
	void attach(RxmEndpoint *ep);
	void detach(RxmEndpoint *ep);
	using CompletionQueue::write_error;
	void write_error(void *context, uint64_t flags, int err, size_t len, size_t olen,
			 uint64_t data, uint64_t tag, int prov_errno);

private:
	[[gnu::noinline]] void progress_all(); // run_progress beyond one serialised endpoint
	[[gnu::noinline]] ssize_t progress_and_take(void *buf, size_t count, fi_addr_t *src_addr);
	BoundEndpoints eps_;
};

} // namespace rxm

#endif
