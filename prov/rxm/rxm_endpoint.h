// RxmEndpoint: a reliable datagram (FI_EP_RDM) endpoint built from core MSG connections that
// are opened on demand. See README.md for the protocols.
//
// A util::Endpoint: binding (CQs, counters, EQ, AV), FI_ENABLE / FI_GETOPSFLAG /
// FI_SETOPSFLAG, the generic options and the completion helpers (selective completion,
// counters) are util's. rxm adds, around them: its lock (the progress thread may run),
// FI_RMA_EVENT as the condition for remote counters, FI_OPT_CM_DATA_SIZE, a default
// FI_OPT_MIN_MULTI_RECV, and its place in the bound CQs' and counters' BoundEndpoints lists
// (reading them drives this endpoint's progress).
#ifndef OFI_PROV_RXM_ENDPOINT_H
#define OFI_PROV_RXM_ENDPOINT_H

#include "prov/rxm/rxm_cm_data.h"
#include "prov/rxm/rxm_coll.h"
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_conn.h"
#include "prov/rxm/rxm_core_wait.h"
#include "prov/rxm/rxm_shm.h"
#include "prov/rxm/rxm_matcher.h"
#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_cntr.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_ops.h"
#include "prov/util/cq_progress_ops.h"
#include "prov/util/endpoint.h"
#include "prov/util/lock.h"
#include "prov/util/rx_inplace_ops.h"
#include "prov/util/rx_place_ops.h"

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <array>
#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace rxm {

class RxmDomain;

class RxmEndpoint : public util::Endpoint {
public:
	static int open(RxmDomain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
	~RxmEndpoint() override;
	int close() override;
	// Connections whose state is still held (live, being set up, or closed and not yet
	// released); for tests and logs.
	size_t connection_count();

	// fi_ops / fi_ops_ep / fi_ops_cm: util's bind, control, getopt and setopt under the
	// endpoint lock, plus what rxm adds (see above).
	int bind(struct fid *bfid, uint64_t flags);
	int control(int command, void *arg);
	int getname(void *addr, size_t *addrlen);
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);
	ssize_t cancel(void *context);

	// What util binds, as the rxm objects they are: util's bind accepts only objects of
	// this endpoint's domain, and RxmDomain makes only these classes.
	RxmCq *tx_cq() const noexcept { return static_cast<RxmCq *>(Endpoint::tx_cq()); }
	RxmCq *rx_cq() const noexcept { return static_cast<RxmCq *>(Endpoint::rx_cq()); }
	RxmAv *av() const noexcept { return static_cast<RxmAv *>(Endpoint::av()); }
	// Every counter slot, bound or not (one counter may fill several).
	std::array<RxmCntr *, kCounterSlots> counters() const noexcept;

	// fi_ops_msg
	ssize_t recv(void *buf, size_t len, void *desc, fi_addr_t src, void *context);
	ssize_t recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
		      void *context);
	ssize_t recvmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t send(const void *buf, size_t len, void *desc, fi_addr_t dest, void *context);
	ssize_t sendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
		      void *context);
	ssize_t sendmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t inject(const void *buf, size_t len, fi_addr_t dest);
	ssize_t senddata(const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
			 void *context);
	ssize_t injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t dest);

	// fi_ops_tagged
	ssize_t trecv(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
		      uint64_t ignore, void *context);
	ssize_t trecvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
		       uint64_t tag, uint64_t ignore, void *context);
	ssize_t trecvmsg(const struct fi_msg_tagged *msg, uint64_t flags);
	ssize_t tsend(const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag,
		      void *context);
	ssize_t tsendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
		       uint64_t tag, void *context);
	ssize_t tsendmsg(const struct fi_msg_tagged *msg, uint64_t flags);
	ssize_t tinject(const void *buf, size_t len, fi_addr_t dest, uint64_t tag);
	ssize_t tsenddata(const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
			  uint64_t tag, void *context);
	ssize_t tinjectdata(const void *buf, size_t len, uint64_t data, fi_addr_t dest,
			    uint64_t tag);

	// fi_ops_rma
	ssize_t read(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr, uint64_t key,
		     void *context);
	ssize_t readv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
		      uint64_t addr, uint64_t key, void *context);
	ssize_t readmsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t write(const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr,
		      uint64_t key, void *context);
	ssize_t writev(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
		       uint64_t addr, uint64_t key, void *context);
	ssize_t writemsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t writedata(const void *buf, size_t len, void *desc, uint64_t data, fi_addr_t dest,
			  uint64_t addr, uint64_t key, void *context);
	ssize_t inject_write(const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
			     uint64_t key);
	ssize_t inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t dest,
				 uint64_t addr, uint64_t key);

	// fi_ops_atomic (emulated: executed by the target, rxm_atomic.cpp)
	ssize_t atomic(const void *buf, size_t count, void *desc, fi_addr_t dest, uint64_t addr,
		       uint64_t key, enum fi_datatype datatype, enum fi_op op, void *context);
	ssize_t atomicmsg(const struct fi_msg_atomic *msg, uint64_t flags);
	ssize_t inject_atomic(const void *buf, size_t count, fi_addr_t dest, uint64_t addr,
			      uint64_t key, enum fi_datatype datatype, enum fi_op op);
	ssize_t fetch_atomic(const void *buf, size_t count, void *desc, void *result,
			     void *result_desc, fi_addr_t dest, uint64_t addr, uint64_t key,
			     enum fi_datatype datatype, enum fi_op op, void *context);
	ssize_t fetch_atomicmsg(const struct fi_msg_atomic *msg, struct fi_ioc *resultv,
				void **result_desc, size_t result_count, uint64_t flags);
	ssize_t compare_atomic(const void *buf, size_t count, void *desc, const void *compare,
			       void *compare_desc, void *result, void *result_desc, fi_addr_t dest,
			       uint64_t addr, uint64_t key, enum fi_datatype datatype,
			       enum fi_op op, void *context);
	ssize_t compare_atomicmsg(const struct fi_msg_atomic *msg, const struct fi_ioc *comparev,
				  void **compare_desc, size_t compare_count,
				  struct fi_ioc *resultv, void **result_desc, size_t result_count,
				  uint64_t flags);
	ssize_t atomicv(const struct fi_ioc *iov, void **desc, size_t count, fi_addr_t dest,
			uint64_t addr, uint64_t key, enum fi_datatype datatype, enum fi_op op,
			void *context);
	ssize_t fetch_atomicv(const struct fi_ioc *iov, void **desc, size_t count,
			      struct fi_ioc *resultv, void **result_desc, size_t result_count,
			      fi_addr_t dest, uint64_t addr, uint64_t key,
			      enum fi_datatype datatype, enum fi_op op, void *context);
	ssize_t compare_atomicv(const struct fi_ioc *iov, void **desc, size_t count,
				const struct fi_ioc *comparev, void **compare_desc,
				size_t compare_count, struct fi_ioc *resultv, void **result_desc,
				size_t result_count, fi_addr_t dest, uint64_t addr, uint64_t key,
				enum fi_datatype datatype, enum fi_op op, void *context);
	int atomicvalid(enum fi_datatype datatype, enum fi_op op, size_t *count);
	int fetch_atomicvalid(enum fi_datatype datatype, enum fi_op op, size_t *count);
	int compare_atomicvalid(enum fi_datatype datatype, enum fi_op op, size_t *count);

	// fi_join with FI_COLLECTIVE and fi_ops_collective (rxm_coll.cpp); the collectives rxm
	// does not run (alltoall, reduce_scatter, reduce, gather, barrier2, msg) have no member
	// here and so answer -FI_ENOSYS.
	int join(const void *addr, uint64_t flags, struct fid_mc **mc, void *context);
	ssize_t barrier(fi_addr_t coll_addr, void *context);
	ssize_t broadcast(void *buf, size_t count, void *desc, fi_addr_t coll_addr,
			  fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags,
			  void *context);
	ssize_t allreduce(const void *buf, size_t count, void *desc, void *result,
			  void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype,
			  enum fi_op op, uint64_t flags, void *context);
	ssize_t allgather(const void *buf, size_t count, void *desc, void *result,
			  void *result_desc, fi_addr_t coll_addr, enum fi_datatype datatype,
			  uint64_t flags, void *context);
	ssize_t scatter(const void *buf, size_t count, void *desc, void *result,
			void *result_desc, fi_addr_t coll_addr, fi_addr_t root_addr,
			enum fi_datatype datatype, uint64_t flags, void *context);
	// fi_close of a group's fid_mc: the endpoint forgets the group.
	void leave(RxmMc *mc);
	// CollGroup's transport: an internal eager message to AV entry 'dest'.
	int send_collective(fi_addr_t dest, uint64_t wire_id, uint64_t seq, uint32_t step,
			    std::span<const uint8_t> payload);

	// Drives the core CQ and EQ; called by reads of the bound CQs.
	void progress();
	// fi_trywait on the core CQ and EQ: 0 when blocking on their fds is safe.
	int core_trywait();
	// fi_trywait on the core CQ and EQ before a reader sleeps on their fds; true when it
	// may sleep (also when the core has no fds: the reader then polls every millisecond).
	bool core_may_sleep();
	// A bound CQ's or counter's fd was handed out (FI_GETWAIT): hands out the core CQ's and
	// the shm side's, now and when the shm side opens (CoreWaitFds::hand_out says why).
	void hand_out_lower_wait_fds();

private:
	RxmEndpoint(RxmDomain *domain, struct fi_info *info, void *context);
	// Sets the protocol limits, then runs the steps below in order; a failing step's
	// error is returned after shutdown_all released what the earlier ones made.
	int enable() override;
	void choose_limits();
	int listen_for_peers();
	int open_srx_if_wanted();
	int prepare_core_conn_info();
	int allocate_pools();
	bool byte_stream_core() const; // the core is a socket byte stream (tcp)
	void shutdown_all();
	size_t drain_core_cq(); // returns how many completions it handled
	size_t drain_cq(struct fid_cq *cq); // the core's or the shm side's
	// drain_cq, unless the core's progress entry (util/cq_progress_ops.h, null over a
	// foreign core) says a read would find nothing.
	size_t progress_and_drain(struct fid_cq *cq, const struct ofi_cq_progress_ops *ops);
	void drain_core_eq();
	void handle_core_eq_event(CoreEqEvent &ev);
	int open_core_queues();
	// Adds/removes the core wait fds to/from the bound CQs' and counters' epoll sets.
	void register_wait_sources();
	void unregister_wait_sources();
	ssize_t cancel_queued_send(void *context);
	void start_auto_progress();
	void stop_auto_progress();

	// Sending (rxm_send.cpp)
	ssize_t send_common(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
			    void *context, uint64_t data, uint64_t tag, uint64_t flags, bool tagged);
	// Application operations (for_peer set) leave kControlReserve slots for internal
	// messages (rendezvous done, acks, atomic responses), which must never fail for lack of
	// room, and are held to the peer's share (rxm_share.h) and charged to it: a peer that
	// does not drain cannot take the pool from the others.
	TxOp *alloc_op(RxmConn *for_peer = nullptr);
	void free_op(TxOp *op);
	TxBuffer *alloc_tx_buffer(RxmConn *for_peer = nullptr); // same reserve and share as ops
	void free_tx_buffer(TxBuffer *buf);
	void queue_op(RxmConn *conn, TxOp *op);
	void pump(RxmConn *conn);
	bool pump_one(RxmConn *conn, TxOp *op);
	// inline: defined and used in rxm_send.cpp only (the small send's steps, inlined there).
	inline size_t eager_size_to(const RxmConn *conn) const;
	inline bool goes_by_cma_rndv(const RxmConn *conn, uint64_t total, uint64_t flags) const;
	inline bool send_eager_at_once(RxmConn *conn, const struct iovec *iov, size_t count,
				       uint64_t total, void *context, uint64_t data, uint64_t tag,
				       uint64_t flags, bool tagged);
	// send_common's part for a message that does not go at once (queued, SAR, rendezvous).
	ssize_t send_queued(RxmConn *conn, const struct iovec *iov, void **desc, size_t count,
			    uint64_t total, void *context, uint64_t data, uint64_t tag,
			    uint64_t flags, bool tagged);
	void on_tx_buffer_done(TxBuffer *buf, int err);
	void on_rma_done(TxOp *op, int err);
	void maybe_finish(TxOp *op);
	void finish_op(TxOp *op);
	void fail_op(TxOp *op, int err);
	// invalidate_key: the message (rndv_done) also invalidates that key of the peer's
	// (wire_flag::rndv_invalidate), when the core can.
	bool send_control(RxmConn *conn, WireOp op, uint64_t msg_id, uint16_t flags = 0,
			  const uint64_t *invalidate_key = nullptr);
	bool send_control_at_once(RxmConn *conn, WireOp op, uint64_t msg_id, uint16_t flags);
	inline bool inject_prepared(RxmConn *conn, TxBuffer *buf); // rxm_send.cpp only
	bool inject_invalidating(RxmConn *conn, TxBuffer *buf, uint64_t peer_key);
	// Sends buf's header followed by [from, from + len) of the iov straight from the
	// application's memory (fi_sendv); -FI_E2BIG when that needs more core iovs than allowed.
	// more: FI_MORE, the core may hold it for the next pass (may_hold_for_app).
	ssize_t send_direct(RxmConn *conn, TxBuffer *buf, const struct iovec *iov, size_t count,
			    uint64_t from, size_t len, bool more);
	// buf's len bytes by fi_send, or by fi_sendmsg with FI_MORE when more.
	ssize_t send_buffer(RxmConn *conn, TxBuffer *buf, void *desc, bool more);
	ssize_t rma_common(const struct fi_msg_rma *msg, uint64_t flags, bool is_write);
	void on_remote_write(const struct fi_cq_data_entry &comp);
	int translate_desc(const struct iovec *iov, void **app_desc, size_t count, uint64_t access,
			   TxOp *op);

	// Per-peer unexpected-message budget (rxm_unexpected_budget.cpp)
	void charge_unexpected(Unexpected *u, size_t bytes);
	void release_unexpected(Unexpected *u); // deletes u
	void hold_peer(RxmConn *conn);
	void maybe_release_peer(RxmConn *conn);

	// Credit flow control over cores that need it (rxm_flow_ctrl.cpp)
	uint16_t granted_credits() const;
	void start_flow_control(RxmConn *conn);
	inline bool take_send_credit(RxmConn *conn); // (inline: rxm_send.cpp)
	void return_send_credit(RxmConn *conn);
	void on_buffer_reposted(RxmConn *conn);
	void send_credit_update(RxmConn *conn);
	void handle_credit_update(RxmConn *conn, const WireHeader &hdr);
	// Credits returned in the header of any message (WireHeader::credits); false when the
	// peer returned more than it was granted (the connection has failed).
	bool take_returned_credits(RxmConn *conn, uint64_t credits);
	// The credits a message about to be posted on conn's core carries back.
	inline uint16_t credits_to_piggyback(const RxmConn *conn) const; // (rxm_send.cpp)

	// Receiving (rxm_recv.cpp)
	ssize_t recv_common(const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
			    uint64_t tag, uint64_t ignore, void *context, uint64_t flags,
			    bool tagged);
	ssize_t post_one(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
			 uint64_t ignore, void *context, uint64_t flags, bool tagged);
	ssize_t post_one_locked(void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
				uint64_t ignore, void *context, uint64_t flags, bool tagged);
	ssize_t take_unexpected_or_post(RecvOp *op, MatchKind kind);
	RecvOp *alloc_recv();          // inline (rxm_recv_inline.h)
	void free_recv(RecvOp *op);    // inline (rxm_recv_inline.h)
	void release_taken_recv(RecvOp *op); // inline (rxm_recv_inline.h)
	void on_rx_buffer(RxBuffer *buf, size_t len);
	bool repost(RxBuffer *buf);
	void handle_message(RxmConn *conn, const WireHeader &hdr, std::span<const uint8_t> payload);
	// The checks a message of a known connection passes before handle_message (from a
	// receive buffer or taken from shm's ring): dropped if the connection failed, the
	// connection failed if the message is malformed, returned credits taken, shm arrival
	// marked. True when the message is to be handled.
	bool admit_message(RxmConn *conn, WireHeader *hdr, bool malformed, size_t len,
			   bool on_shm);
	void handle_first(RxmConn *conn, const WireHeader &hdr, std::span<const uint8_t> payload);
	bool deliver_eager(RxmConn *conn, const WireHeader &hdr, std::span<const uint8_t> payload);
	bool take_expected_eager(RxmConn *conn, const EagerHeader &e, const uint8_t *payload,
				 size_t len); // inline (rxm_recv_inline.h)
	bool take_eager(RxmConn *conn, const WireHeader &hdr, std::span<const uint8_t> payload);
	void buffer_eager(RxmConn *conn, const WireHeader &hdr, std::span<const uint8_t> payload);
	Unexpected *new_unexpected(RxmConn *conn, const WireHeader &hdr);
	void queue_unexpected(Unexpected *u, size_t charge);
	void handle_sar_segment(RxmConn *conn, const WireHeader &hdr,
				std::span<const uint8_t> payload);
	void handle_rndv_done(RxmConn *conn, const WireHeader &hdr);
	RecvOp *claim_receiver(RecvOp *posted, uint64_t msg_len);
	void start_message(RecvOp *op, RxmConn *conn, const WireHeader &hdr);
	void consume_unexpected(RecvOp *op, Unexpected *u);
	size_t place(RecvOp *op, uint64_t offset, std::span<const uint8_t> bytes);
	void complete_recv(RecvOp *op);
	// Direct receives (rxm_direct_recv.cpp): the core offers each message on the shared
	// receive context before placing it; an eager one matching a posted receive goes
	// straight into it.
	static int offer_direct_thunk(void *arg, struct ofi_rx_place_request *req) noexcept;
	int offer_direct(struct ofi_rx_place_request *req);
	bool take_direct(struct ofi_rx_place_request *req, size_t taker);
	size_t srx_index(const void *rx_context) const;
	void mark_srx_in_core(size_t index);
	void on_srx_buffer_back(RxBuffer *buf);
	void on_direct_recv(RecvOp *op, size_t len, int err);
	void start_direct_recv();
	void stop_direct_recv();
	void repost_srx_batch();
	void start_rndv_reads(RecvOp *op, const uint64_t *cma_addr);
	void post_pending_reads();
	void on_rndv_read_done(RecvOp *op, int err);
	// Fails the connections of rendezvous reads their peer did not serve in time.
	void expire_rndv_reads(std::chrono::steady_clock::time_point now);
	// cma_addr: the virtual addresses of a same-host offer (rxm_cma.h), used if op's
	// request carried one.
	void start_rndv(RecvOp *op, const uint64_t *cma_addr);
	void finish_discarded_rndv(Unexpected *u);
	void expose_for_rndv_write(RecvOp *op);
	void handle_rndv_write_ready(RxmConn *conn, const WireHeader &hdr,
				     std::span<const uint8_t> payload);
	void post_pending_writes();
	bool queue_control(RxmConn *conn, const WireHeader &hdr, std::span<const uint8_t> payload);
	fi_addr_t source_of(RxmConn *conn);
	fi_addr_t known_source(RxmConn *conn); // source_of's common case (rxm_recv_inline.h)
	ssize_t peek(const struct fi_msg_tagged *msg, uint64_t flags);

	// Collectives (rxm_coll.cpp)
	void handle_collective(RxmConn *conn, const WireHeader &hdr,
			       std::span<const uint8_t> payload);
	void coll_progress();
	// The connection to a peer failed: messages of its groups may be lost, so every group
	// it is a member of fails (its collectives complete with -FI_EIO instead of waiting).
	void coll_member_lost(RxmConn *conn);
	// Reports what the group finished and whose messages left: the join's FI_JOIN_COMPLETE,
	// collectives' CQ entries.
	void reap_collectives(CollGroup &group);
	void report_collective(CollGroup &group, const util::coll::Done &done);
	// The core finished sending a collective message (err: it was lost).
	void coll_sent(uint64_t wire_id, uint64_t seq, int err);
	// Fails a group (its collectives complete with -FI_EIO), safely from anywhere.
	void fail_group(CollGroup &group);
	// The group behind a collective address (fi_mc_addr of a join), or nullptr.
	CollGroup *group_of(fi_addr_t coll_addr);
	// Checks, issues one collective on a group and reports what finished.
	template <class Issue>
	ssize_t issue_collective(fi_addr_t coll_addr, uint64_t flags, Issue issue);

	// Atomics (rxm_atomic.cpp)
	// compare/result: the caller's ioc arrays (1 to kAtomicMaxTargets entries each).
	ssize_t atomic_common(const struct fi_msg_atomic *msg, const struct fi_ioc *compare,
			      size_t compare_count, const struct fi_ioc *result,
			      size_t result_count, uint64_t flags, int kind);
	// The registered memory an atomic target names, if it lies inside a registration
	// granting 'need'; nullptr otherwise. Called under the domain's atomic lock.
	uint8_t *registered_target(const AtomicTarget &target, size_t elem, uint64_t need);
	void handle_atomic_request(RxmConn *conn, const WireHeader &hdr,
				   std::span<const uint8_t> payload);
	void handle_atomic_response(RxmConn *conn, const WireHeader &hdr,
				    std::span<const uint8_t> payload);
	TxOp *awaiting_op(RxmConn *conn, uint64_t msg_id, TxKind kind);

	// Connections (rxm_conn.cpp)
	RxmConn *conn_for_send(fi_addr_t dest, int *err);
	void remember_route(fi_addr_t dest, RxmConn *conn, uint64_t av_generation);
	// Every route conn_for_send remembered is stale: peers_ changed or a connection closed.
	void routes_changed() { routes_epoch_++; }
	RxmConn *new_conn();
	int setup_core_ep(RxmConn *conn, struct fi_info *info);
	int start_connect(RxmConn *conn);
	void handle_eq_event(uint32_t event, const struct fi_eq_cm_entry *entry, size_t len);
	void handle_eq_error(const struct fi_eq_err_entry &err);
	void handle_connreq(const struct fi_eq_cm_entry *entry, size_t data_len);
	void on_connected(RxmConn *conn);
	void fail_conn(RxmConn *conn, int err);
	void close_core(RxmConn *conn);  // retires the core endpoint (closed by close_retired)
	void close_retired();
	bool drain_core_cq_until_empty();
	void mark_closed(RxmConn *conn);    // state closed; released by trim_conns once unused
	bool conn_referenced(const RxmConn *conn) const;
	void trim_conns();
	void finish_core_held(RxmConn *conn, int err);
	void set_aside_eq_events(const std::vector<RetiredCoreEp> &closed);
	void read_core_eq_ahead();
	int bind_connections_to_own_ip();
	bool connection_known_dead(RxmConn *conn);
	void probe_connection(RxmConn *conn);
	void run_conn_timers();
	void retry_connect(RxmConn *old);
	void arm_conn_timer(std::chrono::steady_clock::time_point when);
	std::chrono::steady_clock::time_point setup_deadline() const;
	RxmConn *conn_of(fid_t fid) const;
	size_t own_cm_data(uint8_t *out, RejectReason reason, const RxmConn *conn = nullptr) const;
	RxmConn *conn_by_id(uint32_t id) const;
	int open_srx();
	// FI_REMOTE_READ / FI_REMOTE_WRITE counters (FI_RMA_EVENT): core counters bound to every
	// core endpoint, whose growth progress adds to the application's counters.
	int open_remote_counters();
	void collect_remote_counts();
	// Puts this endpoint on (takes it off) the BoundEndpoints list of each distinct CQ and
	// counter bound here, whose reads then drive its progress.
	void attach_to_bound();
	void detach_from_bound();

	RxmDomain *domain_; // util::Endpoint holds the reference
	struct fi_info *info_;
	// Real unless the domain's application serialises its calls and no rxm thread runs
	// (set in the constructor, util's policy: prov/util/lock.h).
	util::Lock lock_;
	// progress() calls, and the one during which the last eager message went to the core:
	// a second one in the same interval is part of a burst (send_for_coalescing).
	uint64_t progress_passes_ = 0;
	bool last_pass_busy_ = false; // the last progress() drained core completions
	unsigned idle_passes_ = 0;    // idle passes that skipped the clock (see progress())
	static constexpr unsigned kIdleClockEvery = 8;
	uint64_t last_small_send_pass_ = ~uint64_t{0};
	bool attached_ = false;
	// Calls fn once on each distinct CQ and counter bound here.
	template <class Fn> void for_each_bound_waitable(Fn fn) const;
	struct fid_cntr *core_remote_cntr_[2] = {}; // [0] remote reads, [1] remote writes
	uint64_t core_remote_seen_[2] = {};
	size_t eager_limit_ = 0;
	size_t sar_limit_ = 0;
	// Over RDMA cores (FI_OFI_RXM_STREAM_RNDV): a message above the eager size sent behind
	// other sends still in flight to its peer goes by rendezvous instead of SAR
	// (rxm_provider.h: stream_rndv).
	bool stream_rndv_ = false;
	size_t inject_limit_ = 0;
	// Payload goes from the application's buffers to the core (no bounce copy) when the
	// core needs no local registration; core_iov_limit_ bounds header + payload pieces.
	bool zero_copy_ = false;
	size_t core_iov_limit_ = 1;
	// Same-host rendezvous (rxm_cma.h): on when FI_OFI_RXM_USE_CMA allows it and the core
	// has RMA reads to fall back on. Messages above cma_rndv_min_ then use rendezvous on
	// connections whose peer pulls by process_vm_readv (or may: not known yet).
	bool cma_ = false;
	size_t cma_rndv_min_ = SIZE_MAX;
	size_t cma_rndv_min_shm_ = SIZE_MAX; // for connections whose sends go over shm
	// Over our shm as the core (shm;ofi_rxm): its kernel-given peer pids (rxm_rndv_cma.cpp).
	struct ofi_shm_peer_ops *core_peer_ops_ = nullptr;
	bool open_core_peer_ops();
	// Over our shm or tcp as the core: its framed sends (prov/util/framed_send_ops.h), or
	// null; the shm side's are in ShmPath (rxm_send.cpp).
	const struct ofi_framed_send_ops *core_send_ops_ = nullptr;
	void open_core_send_ops();
	int prove_core_peer(RxmConn *conn, uint32_t pid);
	uint8_t cma_token_[16] = {}; // its address and value prove to peers who we are
	// false: malformed offer. Proves the peer's pid on the first offer of a connection.
	bool check_cma_offer(RxmConn *conn, std::span<const uint8_t> bytes, CmaOffer *offer);
	// true: the rendezvous of op was pulled by process_vm_readv and op completed (or, for
	// a keyless offer that cannot be pulled, failed).
	bool pull_by_cma(RecvOp *op, const uint64_t *cma_addr);
	void fail_keyless_pull(RecvOp *op, int err);
	// What a rendezvous done of op says about the peer's pulls (and op's fate).
	void note_rndv_done(RxmConn *conn, TxOp *op, uint16_t done_flags);
	// Our rendezvous offers to conn's peer go without keys: it proved it pulls them.
	bool cma_keyless(const RxmConn *conn) const { return cma_ && conn->cma_peer_pulls > 0; }

	// Same-host peers over shm (rxm_shm.cpp, README.md "Same-host peers over shm").
	// The endpoint a connection's sends take: the core until our shm_moved marker left.
	struct fid_ep *tx_ep(const RxmConn *conn) const
	{
		return conn->tx_on_shm ? conn->shm_ep : conn->core_ep;
	}
	size_t tx_iov_limit(const RxmConn *conn) const
	{
		return conn->tx_on_shm ? shm_->iov_limit : core_iov_limit_;
	}
	// The endpoint a rendezvous transfer (read or write) for a message takes, and the local
	// descriptor there: over shm when the message came over shm (kArrivedOnShm; its sender
	// registered the twins there), else over the core. shm needs no local descriptors.
	static struct fid_ep *rndv_ep(const RxmConn *conn, bool on_shm)
	{
		return on_shm && conn->shm_ep ? conn->shm_ep : conn->core_ep;
	}
	static void *rndv_desc(void *core_desc, bool on_shm) { return on_shm ? nullptr : core_desc; }
	// Binds what rxm registered for a rendezvous request to the connection it leaves on;
	// leaving over shm, each registration the peer reads gets its shm twin there first.
	// False when the core has no room to bind one now (RxmDomain::bind_internal's
	// -FI_EAGAIN): the request must wait and come back here before its keys go out.
	bool bind_rndv_sources(TxOp *op, RxmConn *conn);
	// The shm twin of one of rxm's own registrations of a moved connection, bound to its
	// shm endpoint (as bind_internal binds the original to the core endpoint).
	int twin_internal(const RxmConn *conn, void *buf, size_t len, uint64_t access,
			  struct fid_mr *original, struct fid_mr **twin);
	bool shm_wanted() const; // FI_OFI_RXM_USE_SHM and a core the switch works over
	int open_shm();          // the endpoint's shm side, on first use
	size_t shm_cq_size() const;
	void close_shm_side();   // shutdown_all: after every connection's shm endpoint
	void shm_register_wait();
	void shm_unregister_wait();
	bool shm_may_sleep();
	size_t shm_drain_cq();    // progress(): the shm CQ, every pass
	void shm_check_eq(std::chrono::steady_clock::time_point now); // the EQ, when due
	// Senders: the shm EQ's check that idle passes skipped (see progress()).
	void check_shm_before_send()
	{
		if (shm_check_on_send_) [[unlikely]]
			shm_check_before_send();
	}
	void shm_check_before_send();
	void drain_shm_eq();
	void drain_shm_until_empty();
	void shm_offer(RxmConn *conn);    // acceptor of a core connection, once it is up
	void handle_shm_offer(RxmConn *conn, std::span<const uint8_t> payload);
	void handle_shm_moved(RxmConn *conn);
	void quiet_core_if_moved(RxmConn *conn); // both directions on shm: core hint (quiet_ops.h)
	// Whether op's core sends may carry FI_MORE: its application will read the completion,
	// which runs the pass that sends them (rxm_send.cpp).
	inline bool may_hold_for_app(bool report, const RxmConn *conn) const;
	// The second or later eager message of a burst that may be held: FI_MORE, no inject.
	inline bool send_for_coalescing(bool report, const RxmConn *conn);
	void handle_shm_connreq(const struct fi_eq_cm_entry *entry, size_t data_len);
	void handle_shm_event(uint32_t event, const struct fi_eq_cm_entry *entry, size_t len);
	void handle_shm_error(const struct fi_eq_err_entry &err);
	void shm_up(RxmConn *conn);       // FI_CONNECTED on its shm endpoint
	void shm_commit(RxmConn *conn);   // queues our shm_moved marker
	void post_shm_rx(RxmConn *conn);
	// Messages consumed in shm's ring (rxm_shm_direct.cpp, util/rx_inplace_ops.h), on a
	// moved peer's shm endpoint or on the core endpoint when the core offers it.
	void start_shm_direct(RxmConn *conn);
	void stop_shm_direct(RxmConn *conn);
	static int shm_consume_thunk(void *arg,
				     const struct ofi_rx_inplace_request *req) noexcept;
	bool consume_shm(RxmConn *conn, const struct ofi_rx_inplace_request *req);
	bool take_from_shm(RxmConn *conn, const struct ofi_rx_inplace_request *req); // inline
	bool take_general_from_shm(RxmConn *conn, const struct ofi_rx_inplace_request *req);
	// Rendezvous requests and dones of a moved peer, taken from the ring during this
	// endpoint's own shm progress (shm_defer_ok_): copied here and handled right after
	// that progress (their handling may send, which takes the shm lock the progress
	// holds), before the shm CQ is read (rxm_shm_direct.cpp).
	struct ShmDeferred {
		RxmConn *conn;
		size_t len;
		uint8_t bytes[kWireHeaderSize + rndv_payload_size(kRndvMaxSegments) + kCmaOfferSize];
	};
	bool defer_shm_control(RxmConn *conn, const struct ofi_rx_inplace_request *req);
	bool defer_behind_deferred(RxmConn *conn, const struct ofi_rx_inplace_request *req,
				   uint32_t waiting);
	size_t run_shm_deferred();
	void handle_shm_control(RxmConn *conn, std::span<const uint8_t> message);
	std::vector<ShmDeferred> shm_deferred_;
	bool shm_defer_ok_ = false;
	bool take_pieces(RxmConn *conn, const WireHeader &hdr, const struct iovec *pieces,
			 size_t count);
	void on_inplace_buffer_back(RxmConn *conn);
	void start_core_inplace(RxmConn *conn); // shm as the core: its core endpoint too
	void stop_core_inplace(RxmConn *conn);
	size_t taken_in_place_ = 0; // since progress last looked: counts as handled
	// A failure of the shm side: before the switch the connection stays on the core for
	// good; after it, the whole connection fails.
	void shm_failed(RxmConn *conn, int err, const char *why);
	void close_shm(RxmConn *conn);    // closes its shm endpoint and frees its buffers
	RxmConn *conn_of_shm(fid_t fid) const;
	void close_shm_retired(); // close_retired: retired shm endpoints, then their buffers
	std::unique_ptr<ShmPath> shm_;
	bool shm_open_failed_ = false;
	std::vector<RetiredCoreEp> shm_retired_;  // closed by close_shm_retired
	std::vector<RetiredCoreEp> shm_closing_;  // closed; buffers freed once the CQ was empty
	std::vector<fid_t> shm_just_closed_;      // their stale EQ events are dropped
	size_t shm_setups_ = 0;  // shm connections being set up: the shm EQ is read every call
	std::chrono::steady_clock::time_point shm_eq_read_{};
	bool shm_check_on_send_ = false; // a pass skipped the clock since it was last read
	// Whether every connection with a core endpoint moved both directions to shm, so the
	// core has nothing to deliver but the odd late completion (see progress()). Walks the
	// connections only after core_eps_changed_ moved (a core endpoint opened, a connection
	// finished moving).
	bool core_quiet()
	{
		if (!shm_ || !backlogged_.empty() || !retired_.empty() || !closing_.empty())
			return false;
		if (core_quiet_seen_ != core_eps_changed_) {
			core_quiet_seen_ = core_eps_changed_;
			core_quiet_ = every_core_conn_moved();
		}
		return core_quiet_;
	}
	bool every_core_conn_moved() const;
	uint64_t core_eps_changed_ = 0;
	uint64_t core_quiet_seen_ = ~uint64_t{0};
	bool core_quiet_ = false;
	// A core trywait refused a sleep: the next pass polls the core (see progress()).
	std::atomic<bool> core_poll_asked_{false};
	bool core_poll_asked()
	{
		return core_poll_asked_.load(std::memory_order_relaxed) &&
		       core_poll_asked_.exchange(false, std::memory_order_relaxed);
	}
	void set_shm_state(RxmConn *conn, ShmState state);

	struct fid_fabric *core_fabric_ = nullptr;
	struct fid_eq *core_eq_ = nullptr;
	struct fid_cq *core_cq_ = nullptr;
	const struct ofi_cq_progress_ops *core_cq_progress_ = nullptr; // or null: fi_cq_read
	CoreWaitFds core_eq_wait_;  // what sleepers watch for the cores (none: polled)
	CoreWaitFds core_cq_wait_;
	bool wait_registered_ = false;
	bool lower_fds_handed_out_ = false; // hand_out_lower_wait_fds; under lock_
	void hand_out_lower_wait_fds_locked();
	struct fid_pep *pep_ = nullptr;
	struct fi_info *core_conn_info_ = nullptr; // template for active core endpoints
	EndpointIdentity identity_;
	std::string own_name_;

	Slab tx_slab_;
	std::vector<TxBuffer> tx_buffers_;
	TxBuffer *free_tx_ = nullptr;
	size_t free_tx_count_ = 0;
	struct fid_mr *tx_mr_ = nullptr;
	std::vector<TxOp, PageAllocator<TxOp>> ops_;
	std::vector<uint32_t> free_ops_;
	std::vector<RecvOp, PageAllocator<RecvOp>> recvs_;
	RecvOp *free_recvs_ = nullptr;
	Matcher matcher_;
	std::unordered_map<PeerName, RxmConn *, PeerNameHash> peers_;
	// conn_for_send's answers by AV index, each valid while the AV's generation and
	// routes_epoch_ are what they were when it was taken (epoch 0: never taken).
	struct SendRoute {
		RxmConn *conn = nullptr;
		uint64_t av_generation = 0;
		uint64_t epoch = 0;
	};
	std::vector<SendRoute> send_routes_;
	uint64_t routes_epoch_ = 1;
	// Connections by slot (id & index mask, minus one); a released connection leaves an
	// empty slot that the next connection takes.
	std::vector<std::unique_ptr<RxmConn>> conns_;
	std::vector<uint32_t> free_conn_slots_;
	std::vector<uint16_t> conn_slot_uses_;  // mixed into ids, so a reused slot's id differs
	size_t live_conns_ = 0;
	std::vector<RxmConn *> trim_candidates_; // closed, released once nothing refers to them
	unsigned trim_tick_ = 0;
	std::vector<RxmConn *> credit_waiters_;  // a credit update is due but found no room
	// Connected, with sends queued that the core or rxm had no room for: progress pumps
	// them (and unlinks them once drained or closed), instead of walking every peer.
	IntrusiveList<RxmConn> backlogged_;
	void pump_backlogged();
	std::vector<RetiredCoreEp> retired_;
	// Closed core endpoints whose connection state waits until the core CQ was read empty:
	// completions the core wrote before the close may still point into it.
	std::vector<RetiredCoreEp> closing_;
	std::deque<CoreEqEvent> eq_backlog_; // read from the core EQ, handled before what follows
	// Connection timers: checked by progress while some connection is being set up; the
	// timerfd (in the bound CQs' and counters' wait sets) wakes sleepers at the next deadline.
	bool conn_timers_active_ = false;
	std::chrono::steady_clock::time_point last_eq_read_{}; // see progress()
	static constexpr std::chrono::microseconds kIdleEqInterval{50}; // shm's EQ
	// The core EQ's, once no connection is being set up (see progress()).
	static constexpr std::chrono::microseconds kIdleCoreEqInterval{1000};
	std::atomic<bool> may_have_slept_{false}; // a core trywait allowed a sleep
	int conn_timer_fd_ = -1;
	std::chrono::steady_clock::time_point conn_timer_armed_{};
	uint32_t conn_id_nonce_ = 0; // high bits of connection ids, random per endpoint

	// Shared receive context of the core (FI_OFI_RXM_USE_SRX): one set of receive buffers
	// for all connections; a message names its connection by the id in its header.
	struct fid_ep *srx_ = nullptr;
	Slab srx_slab_;
	std::vector<RxBuffer> srx_buffers_;
	struct fid_mr *srx_mr_ = nullptr;
	// Per shared buffer: the core put a message in it that rxm has not handled yet. Set in
	// the core's progress (possibly another thread's, see offer_direct), cleared when
	// handled. A message is placed directly only while none is set: an earlier one of the
	// same peer must be matched first.
	std::unique_ptr<std::atomic<bool>[]> srx_in_core_;
	std::atomic<size_t> srx_marked_{0}; // how many of srx_in_core_ are set
	bool direct_recv_ = false; // the placer is registered with the core
	// Messages placed directly whose core completion rxm has not read yet.
	size_t directs_in_core_ = 0;
	// A message of this endpoint waits in the core's CQ (in a shared buffer or placed
	// directly): one consumed in place now would overtake it.
	bool core_holds_messages() const;
	// The consumer of messages lying whole in the core's memory (rx_inplace_ops.h) over a
	// core's shared receive context (tcp's read stage; rxm_direct_recv.cpp).
	static int srx_consume_thunk(void *arg, const struct ofi_rx_inplace_request *req) noexcept;
	// Where the core puts the rxm header of a message it places directly: decoded at the
	// offer already, never read (written under the core domain's lock only).
	uint8_t direct_header_sink_[kWireHeaderSize];
	// Within a batch of core completions: shared buffers wait in srx_reposts_.
	bool batching_srx_reposts_ = false;
	std::vector<RxBuffer *> srx_reposts_;
	std::deque<RecvOp *> pending_reads_;
	// Earliest deadline of a rendezvous read in the core (epoch: none); at or after it,
	// progress looks for reads their peer did not serve (expire_rndv_reads).
	std::chrono::steady_clock::time_point rndv_read_next_{};
	std::deque<TxOp *> pending_writes_;
	// FI_PROGRESS_AUTO data progress: a thread runs progress() while the endpoint is enabled.
	std::thread progress_thread_;
	std::atomic<bool> progress_running_{false};
	std::unique_ptr<CollState> coll_;  // created by the first join
};

} // namespace rxm

#endif
