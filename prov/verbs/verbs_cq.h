// A completion queue on an ibv_cq. Work completions are translated into libfabric entries
// when polled (while their request slots are certainly alive) and queued until read.
// Waiting uses the ibv completion channel, whose fd is the CQ's wait object.
#ifndef OFI_PROV_VERBS_CQ_H
#define OFI_PROV_VERBS_CQ_H

#include <deque>
#include <mutex>

#include <infiniband/verbs.h>
#include <rdma/fi_eq.h>

#include "prov/util/fid_object.h"

namespace verbs {

class VerbsDomain;
struct VerbsRequest;

struct CompletionRecord {
	void *op_context = nullptr;
	uint64_t flags = 0;
	size_t len = 0;
	void *buf = nullptr;
	uint64_t data = 0;
	int err = 0;          // FI_* error code (positive); 0 for success
	int prov_errno = 0;   // enum ibv_wc_status
};

// FI_ECANCELED for flushed requests, FI_EIO for every other failure.
int fi_error_for_wc_status(enum ibv_wc_status status);

// Endpoints bound to the CQ hold a reference (util::FidObject::ref): it cannot close under
// them.
class VerbsCompletionQueue : public util::FidStorage<fid_cq>, public util::FidObject {
public:
	static int open(VerbsDomain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
			void *context);

	struct ibv_cq *ibv_cq() const { return cq_; }
	struct fid_cq *cq_fid() { return &embedded_fid.pub; }

	int close() override;
	int control(int command, void *arg);
	ssize_t read(void *buf, size_t count);
	ssize_t readfrom(void *buf, size_t count, fi_addr_t *src_addr);
	ssize_t readerr(struct fi_cq_err_entry *entry, uint64_t flags);
	ssize_t sread(void *buf, size_t count, const void *cond, int timeout);
	ssize_t sreadfrom(void *buf, size_t count, fi_addr_t *src_addr, const void *cond,
			  int timeout);
	int signal();
	const char *strerror(int prov_errno, const void *err_data, char *buf, size_t len);
	int trywait();

	// Moves completions from the device into the queue; an endpoint that is closing
	// calls this until its requests are all accounted for.
	void poll_device();

private:
	VerbsCompletionQueue(VerbsDomain *domain, void *context);
	~VerbsCompletionQueue() override;
	void drain_channel_locked();
	void poll_device_locked();
	void record_completion_locked(const struct ibv_wc &wc);
	void write_entry(void *dst, const CompletionRecord &record) const;
	size_t entry_size() const;

	VerbsDomain *domain_;
	enum fi_cq_format format_ = FI_CQ_FORMAT_CONTEXT;
	enum fi_wait_obj wait_obj_ = FI_WAIT_NONE;
	struct ibv_comp_channel *channel_ = nullptr;
	struct ibv_cq *cq_ = nullptr;
	int signal_fd_ = -1;
	std::mutex lock_;
	std::deque<CompletionRecord> ready_;
};

} // namespace verbs

#endif
