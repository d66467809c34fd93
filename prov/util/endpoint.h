// util::Endpoint: base of a provider's active endpoint (fid_ep).
//
// Handles fi_ep_bind (CQs with FI_TRANSMIT/FI_RECV/FI_SELECTIVE_COMPLETION, counters with
// FI_SEND/FI_RECV/FI_READ/FI_WRITE/FI_REMOTE_READ/FI_REMOTE_WRITE, EQ, AV), fi_control
// (FI_ENABLE, FI_GETOPSFLAG/FI_SETOPSFLAG), fi_getopt/fi_setopt for the generic options,
// reference counting of everything bound, and the completion helpers below that apply the
// selective-completion rule and bump the right counters. The provider's derived class adds
// the data-transfer and CM members it supports (send/recv/..., tsend/..., read/write/...,
// getname/connect/...) and calls install_ops<Self>() in its constructor; everything it does
// not define returns -FI_ENOSYS.
#ifndef OFI_PROV_UTIL_ENDPOINT_H
#define OFI_PROV_UTIL_ENDPOINT_H

#include "prov/util/domain.h"
#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_endpoint.h>

namespace util {

class AddressVector;
class CompletionQueue;
class Counter;
class EventQueue;

class Endpoint : public FidStorage<fid_ep>, public FidObject {
public:
	enum CounterSlot { kSendCntr, kRecvCntr, kReadCntr, kWriteCntr, kRemoteReadCntr,
			   kRemoteWriteCntr, kCounterSlots };

	// Takes the op flags of 'info' (may be NULL: defaults); keeps no copy of it, since an
	// endpoint per connection would carry one each. Holds a reference on the domain.
	Endpoint(Domain &domain, const struct fi_info *info, void *context,
		 size_t fclass = FI_CLASS_EP);
	~Endpoint() override;

	struct fid_ep *ep_fid() noexcept { return &embedded_fid.pub; }
	Domain &domain() noexcept { return domain_; }
	bool enabled() const noexcept { return enabled_; }
	// Names this endpoint for memory bound to it (fi_mr_bind, MrMap::bind): unique in the
	// process and never reused, so a region bound to a closed endpoint stays out of reach of
	// a later endpoint that gets the same address.
	uint64_t access_id() const noexcept { return access_id_; }

	CompletionQueue *tx_cq() const noexcept { return tx_cq_; }
	CompletionQueue *rx_cq() const noexcept { return rx_cq_; }
	Counter *counter(CounterSlot slot) const noexcept { return counters_[slot]; }
	EventQueue *eq() const noexcept { return eq_; }
	AddressVector *av() const noexcept { return av_; }
	uint64_t tx_op_flags() const noexcept { return tx_op_flags_; }
	uint64_t rx_op_flags() const noexcept { return rx_op_flags_; }
	size_t min_multi_recv() const noexcept { return min_multi_recv_; }
	// OFI_OPT_REMOTE_WRITE_CONTEXT (remote_write_context.h): op_context of a peer's RMA
	// write with remote CQ data; NULL unless the layer above set it.
	void *remote_write_context() const noexcept { return remote_write_context_; }

	// ---- completion helpers (call with the domain lock held) ----
	// 'op_flags' are the flags of the operation (tx/rx_op_flags() or fi_*msg flags): with
	// FI_SELECTIVE_COMPLETION bound, only operations carrying FI_COMPLETION produce a CQ
	// entry. 'cq_flags' describe the completion (FI_SEND|FI_MSG, FI_RECV|FI_TAGGED,
	// FI_READ|FI_RMA, ...); FI_SEND/FI_RECV/FI_READ/FI_WRITE also pick the counter.
	// Errors always produce a CQ error entry and bump the counter's error count.
	void complete_tx(uint64_t op_flags, void *context, uint64_t cq_flags, size_t len = 0,
			 uint64_t data = 0, uint64_t tag = 0);
	void complete_rx(uint64_t op_flags, void *context, uint64_t cq_flags, size_t len,
			 void *buf, uint64_t data = 0, uint64_t tag = 0,
			 fi_addr_t src_addr = FI_ADDR_NOTAVAIL);
	void fail_tx(void *context, uint64_t cq_flags, int err, int prov_errno = 0,
		     size_t len = 0, uint64_t data = 0, uint64_t tag = 0);
	// 'olen' = bytes that did not fit (truncation).
	void fail_rx(void *context, uint64_t cq_flags, int err, int prov_errno, size_t len,
		     void *buf, size_t olen = 0, uint64_t data = 0, uint64_t tag = 0,
		     fi_addr_t src_addr = FI_ADDR_NOTAVAIL);
	// Target side of RMA: FI_REMOTE_READ / FI_REMOTE_WRITE counters.
	void count_remote(uint64_t cq_flags);
	// A transmit that writes no CQ entry by nature (fi_inject*) still completes: counters
	// count it (fi_cntr(3) counts completed operations, whatever the CQ shows).
	void count_tx(uint64_t cq_flags);
	// The receive side of count_tx: a receive whose entry the selective-completion rule
	// suppressed still counts (FI_RECV in cq_flags picks the receive counter).
	void count_rx(uint64_t cq_flags);
	// The selective-completion rule alone: does a successful operation posted with
	// 'op_flags' get a CQ entry? For providers that decide when the operation is posted
	// (and then complete it with FI_COMPLETION or count_tx/count_rx).
	bool tx_entry_wanted(uint64_t op_flags) const noexcept
	{
		return tx_cq_ && (!tx_selective_ || (op_flags & FI_COMPLETION));
	}
	bool rx_entry_wanted(uint64_t op_flags) const noexcept
	{
		return rx_cq_ && (!rx_selective_ || (op_flags & FI_COMPLETION));
	}

	// Called on FI_ENABLE after the generic checks; providers override to start the
	// endpoint (the default just marks it enabled).
	virtual int enable();

	// ---- fi_ops ----
	int bind(struct fid *bfid, uint64_t flags);
	int control(int command, void *arg);
	int close() override;

	// ---- fi_ops_ep ----
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);

protected:
	template <class Self>
	void install_ops() noexcept
	{
		fid_ep &pub = embedded_fid.pub;
		pub.fid.ops = ops_ptr<Self, make_fi_ops<Self>>();
		pub.ops = ops_ptr<Self, make_ep_ops<Self>>();
		pub.cm = ops_ptr<Self, make_cm_ops<Self>>();
		pub.msg = ops_ptr<Self, make_msg_ops<Self>>();
		pub.rma = ops_ptr<Self, make_rma_ops<Self>>();
		pub.tagged = ops_ptr<Self, make_tagged_ops<Self>>();
		pub.atomic = ops_ptr<Self, make_atomic_ops<Self>>();
		pub.collective = ops_ptr<Self, make_collective_ops<Self>>();
	}

	// Releases every binding (CQs, counters, EQ, AV). Called by close().
	void unbind_all() noexcept;
	// fi_endpoint(3): completions need somewhere to go, so an endpoint with neither a CQ
	// nor a counter bound cannot be enabled. The check of the default enable(), for
	// overrides that do more before they succeed.
	bool has_completion_target() const noexcept;
	// For providers whose connection calls enable the endpoint themselves (verbs'
	// fi_connect and fi_accept create the queue pair): records what FI_ENABLE would, so
	// later binds are refused as after fi_enable.
	void mark_enabled() noexcept { enabled_ = true; }
	// FI_OPT_MIN_MULTI_RECV before the application sets it (0 unless the provider says).
	void set_min_multi_recv(size_t bytes) noexcept { min_multi_recv_ = bytes; }

private:
	int bind_cq(CompletionQueue *cq, uint64_t flags);
	int bind_counter(Counter *cntr, uint64_t flags);

	Domain &domain_;
	const uint64_t access_id_;
	bool enabled_ = false;
	CompletionQueue *tx_cq_ = nullptr;
	CompletionQueue *rx_cq_ = nullptr;
	bool tx_selective_ = false;
	bool rx_selective_ = false;
	Counter *counters_[kCounterSlots] = {};
	EventQueue *eq_ = nullptr;
	AddressVector *av_ = nullptr;
	uint64_t tx_op_flags_ = 0;
	uint64_t rx_op_flags_ = 0;
	size_t min_multi_recv_ = 0;
	void *remote_write_context_ = nullptr;
};

} // namespace util

#endif
