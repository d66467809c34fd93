// Per-operation bookkeeping for work requests. Each posted work request carries a pointer
// to one of these as its wr_id, so a completion (even an error completion, whose opcode
// verbs leaves undefined) can be reported with the right context and flags, and the slot
// returned to its owner (an endpoint, or a shared receive context for receives posted to
// an SRQ). Slots come from a pool sized when the owner opens: the data path does not
// allocate.
#ifndef OFI_PROV_VERBS_REQUEST_H
#define OFI_PROV_VERBS_REQUEST_H

#include <cstdint>
#include <mutex>
#include <vector>

#include <infiniband/verbs.h>

#include "prov/verbs/verbs_provider.h"

namespace verbs {

struct VerbsRequest;

// Whoever posted a request: the CQ hands the slot back to it once the completion is read.
class RequestOwner {
public:
	// Completions of a closing owner are dropped instead of reported.
	virtual bool closing() const = 0;
	virtual void release_request(VerbsRequest *request) = 0;

protected:
	~RequestOwner() = default;
};

struct VerbsRequest {
	RequestOwner *owner = nullptr;
	void *context = nullptr;
	uint64_t flags = 0;       // completion flags (FI_SEND | FI_MSG, FI_RMA | FI_READ, ...)
	bool report = true;       // successful completion wanted (errors are always reported)
	bool is_recv = false;
	void *buf = nullptr;      // first buffer of a receive, reported in FI_CQ_FORMAT_DATA
	int num_sge = 0;          // receives posted before the QP exists keep their list here
	struct ibv_sge sge[kMaxSge] {};
	VerbsRequest *next_free = nullptr;
};

class RequestPool {
public:
	RequestPool(size_t capacity, RequestOwner *owner, bool is_recv) : slots_(capacity)
	{
		for (VerbsRequest &slot : slots_) {
			slot.owner = owner;
			slot.is_recv = is_recv;
			slot.next_free = free_;
			free_ = &slot;
		}
	}
	RequestPool(const RequestPool &) = delete;
	RequestPool &operator=(const RequestPool &) = delete;

	// nullptr when every slot is in flight: the queue is full, the caller says -FI_EAGAIN.
	VerbsRequest *acquire()
	{
		std::lock_guard<std::mutex> guard(lock_);
		VerbsRequest *slot = free_;
		if (slot) {
			free_ = slot->next_free;
			in_use_++;
		}
		return slot;
	}
	void release(VerbsRequest *slot)
	{
		std::lock_guard<std::mutex> guard(lock_);
		slot->next_free = free_;
		free_ = slot;
		in_use_--;
	}
	size_t in_use()
	{
		std::lock_guard<std::mutex> guard(lock_);
		return in_use_;
	}
	size_t available()
	{
		std::lock_guard<std::mutex> guard(lock_);
		return slots_.size() - in_use_;
	}

private:
	std::vector<VerbsRequest> slots_;
	VerbsRequest *free_ = nullptr;
	size_t in_use_ = 0;
	std::mutex lock_;
};

} // namespace verbs

#endif
