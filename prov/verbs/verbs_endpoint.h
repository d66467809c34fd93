// An FI_EP_MSG endpoint: one RC queue pair on an rdma_cm id. Lifecycle and binding live
// in verbs_endpoint.cpp, connection management in verbs_endpoint_cm.cpp, the data
// operations in verbs_endpoint_msg.cpp and verbs_endpoint_rma.cpp.
#ifndef OFI_PROV_VERBS_ENDPOINT_H
#define OFI_PROV_VERBS_ENDPOINT_H

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_collective.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/rdma_cma.h>

#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_eq.h"
#include "prov/verbs/verbs_request.h"
#include "prov/util/endpoint.h"

struct ofi_flow_ctrl_ops;

namespace verbs {

class VerbsConnRequest;

class VerbsSharedRx;

// A util::Endpoint: util binds the EQ and CQs (with FI_SELECTIVE_COMPLETION), runs FI_ENABLE
// and FI_GETOPSFLAG/FI_SETOPSFLAG, holds the references and answers the generic options.
// Verbs adds the shared receive context binding, the queue pair and rdma_cm id, its own
// option (FI_OPT_CM_DATA_SIZE) and the data path. Successful completions are reported by
// the CQ's poll as the request slot says (decided at post time by util's selective-completion
// rule). Tagged, atomic and collective entries (not defined here) return -FI_ENOSYS.
class VerbsEndpoint : public util::Endpoint, public CmEventTarget, public RequestOwner {
public:
	// 'info' must be non-null (the domain checks). An info from FI_CONNREQ gives its
	// request's CM id to the endpoint. Throws util::Error.
	VerbsEndpoint(VerbsDomain &domain, struct fi_info *info, void *context);
	~VerbsEndpoint() override;

	// Completions of a closing endpoint are dropped instead of reported.
	bool closing() const override { return closing_.load(); }
	bool settle_deferred(VerbsEventQueue &eq, std::chrono::steady_clock::time_point now) override;
	std::chrono::steady_clock::time_point deadline() const override { return disconnect_due_; }
	void release_request(VerbsRequest *request) override;

	// The OFI_FLOW_CTRL_OPS_NAME extension (prov/util/flow_ctrl_ops.h), handed out by the
	// domain's fi_open_ops.
	static struct ofi_flow_ctrl_ops *flow_ctrl_ops();
	int flow_ctrl_enable(uint64_t credits);
	int flow_ctrl_add_credits(uint64_t credits);
	ssize_t flow_ctrl_credits();

	// Binds the type-2 memory window 'mw' to [addr, addr+len) of 'mr' with remote-read
	// access under 'rkey', by a bind work request on this endpoint's QP: only this QP's peer
	// can use the key, and only for what follows the bind in the send queue (a message
	// carrying the key, posted after this, reaches the peer after the bind took effect).
	// For verbs_mr.cpp's fi_mr_enable; -FI_EOPBADSTATE unless connected, -FI_EAGAIN when
	// every request slot is in flight.
	// *qp_num: the QP the window is bound over (what a peer's invalidation names).
	int bind_window(struct ibv_mw *mw, struct ibv_mr *mr, const void *addr, size_t len,
			uint32_t rkey, uint32_t *qp_num);

	// fi_ops (control is util's; FI_ENABLE comes to enable())
	int close() override;
	// Adds shared receive contexts to util's bind; refuses counters and AVs (-FI_ENOSYS).
	int bind(struct fid *bfid, uint64_t flags);
	int enable() override;
	// fi_ops_ep (FI_OPT_CM_DATA_SIZE here, the rest util's)
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);
	ssize_t rx_size_left();
	ssize_t tx_size_left();
	// fi_ops_cm
	int setname(void *addr, size_t addrlen);
	int getname(void *addr, size_t *addrlen);
	int getpeer(void *addr, size_t *addrlen);
	int connect(const void *addr, const void *param, size_t paramlen);
	int accept(const void *param, size_t paramlen);
	int shutdown(uint64_t flags);
	void on_cm_event(const struct rdma_cm_event &event, VerbsEventQueue &eq) override;
	// fi_ops_msg
	ssize_t recv(void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context);
	ssize_t recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      void *context);
	ssize_t recvmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t send(const void *buf, size_t len, void *desc, fi_addr_t dest_addr, void *context);
	ssize_t sendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr,
		      void *context);
	ssize_t sendmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t inject(const void *buf, size_t len, fi_addr_t dest_addr);
	ssize_t senddata(const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest_addr,
			 void *context);
	ssize_t injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr);
	// fi_ops_rma
	ssize_t read(void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t addr,
		     uint64_t key, void *context);
	ssize_t readv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      uint64_t addr, uint64_t key, void *context);
	ssize_t readmsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t write(const void *buf, size_t len, void *desc, fi_addr_t dest_addr, uint64_t addr,
		      uint64_t key, void *context);
	ssize_t writev(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr,
		       uint64_t addr, uint64_t key, void *context);
	ssize_t writemsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t inject_write(const void *buf, size_t len, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key);
	ssize_t writedata(const void *buf, size_t len, void *desc, uint64_t data,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context);
	ssize_t inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key);

private:
	enum class State { Idle, Resolving, Connecting, Accepting, Connected, Shutdown, Failed };

	// One transmit work request, described independently of the API form that asked.
	struct SendRequest {
		enum ibv_wr_opcode opcode;
		const struct iovec *iov;
		void **desc;
		size_t count;
		uint64_t data = 0;          // immediate data for *_WITH_IMM
		uint64_t remote_addr = 0;
		uint64_t rkey = 0;
		void *context = nullptr;
		uint64_t flags = 0;         // FI_* operation flags
		uint64_t comp_flags = 0;    // flags of the completion entry
	};

	struct InfoDeleter {
		void operator()(struct fi_info *info) const { fi_freeinfo(info); }
	};

	VerbsDomain &verbs_domain() noexcept { return static_cast<VerbsDomain &>(domain()); }
	// The bound CQs and EQ are verbs' own: bind accepts no others.
	VerbsCompletionQueue *verbs_tx_cq() const noexcept
	{
		return static_cast<VerbsCompletionQueue *>(tx_cq());
	}
	VerbsCompletionQueue *verbs_rx_cq() const noexcept
	{
		return static_cast<VerbsCompletionQueue *>(rx_cq());
	}
	VerbsEventQueue *verbs_eq() const noexcept { return static_cast<VerbsEventQueue *>(eq()); }
	void take_connection_request(struct fi_info *info, VerbsConnRequest &request);
	int bind_shared_rx(struct fid *bfid);
	int enable_locked();
	int create_qp_locked();
	void post_pending_recvs_locked();
	void fail_connection_locked(VerbsEventQueue &eq, int err, int prov_errno,
				    std::vector<uint8_t> data = {});
	void on_route_resolved_locked(VerbsEventQueue &eq);
	void answer_peer_disconnect_locked(VerbsEventQueue &eq);
	void linger_until_peer_answers();
	void drain_outstanding_requests();
	ssize_t post_recv(const struct iovec *iov, void **desc, size_t count, void *context,
			  uint64_t flags);
	ssize_t post_send(const SendRequest &request);
	int lkey_for(const struct iovec &iov, void *desc, uint32_t *lkey);

	// Addresses for fi_setname/fi_getname/fi_connect (src_addr, dest_addr).
	std::unique_ptr<struct fi_info, InfoDeleter> info_;
	VerbsSharedRx *srx_ = nullptr;  // receives come from its SRQ instead of rx_pool_
	size_t tx_size_;
	size_t rx_size_;
	size_t tx_iov_limit_ = 1;
	size_t rx_iov_limit_ = 1;
	size_t inject_size_ = 0;
	size_t max_msg_size_ = 0;
	// FI_RX_CQ_DATA accepted: remote CQ data of RMA writes may consume posted receives.
	// Verbs has no other way to deliver it, so without this writedata is refused.
	bool rx_cq_data_mode_ = false;
	// Credit flow control (flow_ctrl_ops): once enabled, a send that consumes a peer receive
	// takes one of peer_credits_, and none is posted without one.
	std::atomic<bool> flow_ctrl_{false};
	std::atomic<uint64_t> peer_credits_{0};
	bool take_peer_credit();
	uint8_t connreq_responder_resources_ = 0;
	uint8_t connreq_initiator_depth_ = 0;

	std::mutex lock_;           // CM state, the id, the QP and the pending receives
	std::atomic<State> state_{State::Idle};
	std::atomic<bool> closing_{false};
	bool shutdown_reported_ = false;
	// The peer disconnected while sends were in flight: the answer (which flushes the QP)
	// waits until they complete or disconnect_due_ passes. See on_cm_event.
	bool disconnect_deferred_ = false;
	std::chrono::steady_clock::time_point disconnect_due_{};
	VerbsEventQueue *deferred_eq_ = nullptr; // the EQ asked to call settle_deferred
	std::atomic<bool> peer_answered_{false};  // DISCONNECTED seen while closing
	bool connreq_taken_ = false;     // id_ came from a connection request
	struct rdma_cm_id *id_ = nullptr;
	struct ibv_qp *qp_ = nullptr;
	std::vector<uint8_t> connect_data_;      // encoded private data for rdma_connect
	RequestPool tx_pool_;
	RequestPool rx_pool_;
	std::vector<VerbsRequest *> pending_recvs_; // posted before the QP existed
};

} // namespace verbs

#endif
