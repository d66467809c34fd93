// A completion queue on an ibv_cq: a util::CompletionQueue (queue, formats, error entries
// sized by API version, blocking reads, fi_cq_signal, FI_GETWAIT) that verbs fills from the
// device. Work completions are translated when polled, while their request slots are
// certainly alive; a read polls the device only when the queue cannot fill it already.
// The ibv completion channel's fd is a polled fd of util's Waitable: a blocked reader
// sleeps on it, and before sleeping the CQ is armed (ibv_req_notify_cq) and polled once
// more, because the channel fires only for a completion that arrives after arming. Before
// that, a reader that found nothing yields the CPU once (FI_VERBS_YIELD_BEFORE_SLEEP).
#ifndef OFI_PROV_VERBS_CQ_H
#define OFI_PROV_VERBS_CQ_H

#include <memory>
#include <mutex>

#include <infiniband/verbs.h>
#include <rdma/fi_eq.h>

#include "prov/util/completion_queue.h"

namespace verbs {

class VerbsDomain;

// FI_ECANCELED for flushed requests, FI_EIO for every other failure.
int fi_error_for_wc_status(enum ibv_wc_status status);

// Endpoints bound to the CQ hold a reference (util::FidObject::ref): it cannot close under
// them.
class VerbsCompletionQueue : public util::CompletionQueue {
public:
	// The attributes verbs accepts (util::Error otherwise: -FI_EBADFLAGS, -FI_EINVAL for an
	// unknown format, -FI_ENOSYS for wait conditions and wait objects other than NONE,
	// UNSPEC and FD), with the size the device can hold: util's queue is made as large as
	// the ibv CQ, so it never overflows while the device still has room.
	static struct fi_cq_attr checked_attr(const struct fi_cq_attr &attr,
					      const struct ibv_device_attr &device);

	// 'attr' as checked_attr returns it. Throws util::Error.
	VerbsCompletionQueue(VerbsDomain &domain, const struct fi_cq_attr &attr, void *context);
	~VerbsCompletionQueue() override;

	struct ibv_cq *ibv_cq() const { return cq_.get(); }

	// fi_trywait: arms the CQ, then polls once more (a completion that arrived before the
	// arm would never raise the channel); -FI_EAGAIN when anything is queued.
	int trywait();

	// Moves completions from the device into the queue; an endpoint that is closing
	// calls this until its requests are all accounted for.
	void poll_device();

	// ---- util::Waitable / util::CompletionQueue hooks ----
	void run_progress() override { poll_device(); }

protected:
	void progress_for_read(size_t count) override;
	bool before_sleep() override;

private:
	struct ChannelDeleter {
		void operator()(struct ibv_comp_channel *channel) const;
	};
	struct CqDeleter {
		void operator()(struct ibv_cq *cq) const;
	};

	void poll_device_locked();
	// Before a sleep: polls; with nothing there, yields the CPU once. False when the poll
	// found something (no sleep).
	bool nothing_after_yield();
	void record_completion_locked(const struct ibv_wc &wc);
	// Arms the CQ (unless the last arm still stands) and polls what arrived before the arm;
	// false if the device refused.
	bool arm_locked();

	// Declared before the CQ, which must go first (its events are all acked by then).
	std::unique_ptr<struct ibv_comp_channel, ChannelDeleter> channel_;
	std::unique_ptr<struct ibv_cq, CqDeleter> cq_;
	// Serialises polling, so completions enter the queue in device order and request slots
	// go back to their owners one at a time.
	std::mutex poll_lock_;
	// An arm is outstanding: its channel event may be waiting to be consumed. Reads consume
	// it only then, so a busy reader makes no system call for the channel.
	bool channel_event_possible_ = false;
	// A poll since the outstanding arm found completions. Only a completion added after
	// the arm fires it: without one the event cannot be there (no read of the channel)
	// and the arm still stands (no new ibv_req_notify_cq before the next sleep).
	bool polled_since_arm_ = false;
	const bool yield_before_sleep_; // FI_VERBS_YIELD_BEFORE_SLEEP
	VerbsDomain &domain_;
	// wc_flags bits that say a receive invalidated a key of ours (invalidation_flags()).
	const unsigned int invalidation_flags_;
};

} // namespace verbs

#endif
