// RxmCq: rxm's completion queue. Completions are written by the endpoints bound to it; reading
// it drives their progress (the core CQ and EQ), so an application that only polls its CQ
// moves data and establishes connections (manual progress).
//
// Blocking (fi_cq_sread, FI_GETWAIT, fi_trywait) uses util::Waitable: its epoll set holds
// the CQ's eventfd plus the wait fds of the core CQ and core EQ of every enabled endpoint
// bound here, so a blocked reader sleeps until the core has something or another thread
// (auto progress, fi_cq_signal) writes here.
#ifndef OFI_PROV_RXM_CQ_H
#define OFI_PROV_RXM_CQ_H

#include "prov/util/fid_object.h"
#include "prov/rxm/rxm_waitable.h"

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include <atomic>
#include <deque>
#include <mutex>
#include <vector>

namespace rxm {

class RxmDomain;
class RxmEndpoint;

class RxmCq : public util::FidStorage<fid_cq>, public util::FidObject, public RxmWaitable {
public:
	static int open(RxmDomain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
			void *context);
	int close() override;
	struct fid_cq *pub() { return &embedded_fid.pub; }

	ssize_t read(void *buf, size_t count);
	ssize_t readfrom(void *buf, size_t count, fi_addr_t *src_addr);
	ssize_t readerr(struct fi_cq_err_entry *buf, uint64_t flags);
	ssize_t sread(void *buf, size_t count, const void *cond, int timeout);
	ssize_t sreadfrom(void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
			  int timeout);
	int signal();
	const char *strerror(int prov_errno, const void *err_data, char *buf, size_t len);
	int control(int command, void *arg);  // FI_GETWAIT, FI_GETWAITOBJ

	// util::Waitable
	void run_progress() override { progress(); }
	bool has_events() override { return pending_.load(std::memory_order_acquire) > 0; }
	bool cores_quiet() override;
	// fi_trywait on the rxm fabric: progress, then ask the cores whether blocking is safe.
	int trywait_all();
	bool wants_wait_fd() const { return wait_obj_ != FI_WAIT_NONE; }

	// Endpoint side.
	void attach(RxmEndpoint *ep);
	void detach(RxmEndpoint *ep);
	void write(void *context, uint64_t flags, size_t len, void *buf, uint64_t data,
		   uint64_t tag, fi_addr_t source);
	void write_error(void *context, uint64_t flags, int err, size_t len, size_t olen,
			 uint64_t data, uint64_t tag, int prov_errno);

private:
	// Copies out ready entries without progressing (sread has just progressed).
	ssize_t take_entries(void *buf, size_t count, fi_addr_t *src_addr);
	RxmCq(RxmDomain *domain, enum fi_cq_format format, enum fi_wait_obj wait_obj,
	      void *context);
	void progress();
	size_t entry_size() const;

	struct Entry {
		fi_cq_tagged_entry e;
		fi_addr_t source;
	};

	RxmDomain *domain_;
	enum fi_cq_format format_;
	enum fi_wait_obj wait_obj_;
	std::mutex lock_;
	std::deque<Entry> entries_;
	std::deque<fi_cq_err_entry> errors_;
	std::atomic<size_t> pending_{0};  // entries + errors, readable without the lock
};

} // namespace rxm

#endif
