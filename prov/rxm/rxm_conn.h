// RxmConn: one core MSG connection of an rxm endpoint, with the state rxm keeps per peer
// connection: its receive buffers, the ordered queue of sends waiting for the core, segmented
// message reassembly and rendezvous sends waiting for the receiver.
#ifndef OFI_PROV_RXM_CONN_H
#define OFI_PROV_RXM_CONN_H

#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_cm_data.h"
#include "prov/rxm/rxm_credits.h"
#include "prov/rxm/rxm_list.h"
#include "prov/rxm/rxm_ops.h"
#include "prov/rxm/rxm_sar.h"
#include "prov/rxm/rxm_slab.h"

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include <rdma/fi_eq.h>

#include <atomic>
#include <chrono>
#include <string>
#include <vector>

namespace rxm {

class RxmEndpoint;

enum class ConnState {
	connecting,       // we called fi_connect
	accepting,        // we called fi_accept
	connected,
	waiting_for_peer, // our request lost a simultaneous connect; the peer's will arrive
	closed,
};

// Where a connection stands in moving to shared memory (rxm_shm.h).
enum class ShmState : uint8_t {
	none,       // not tried (yet), or FI_OFI_RXM_USE_SHM off
	offered,    // acceptor of the core connection: our offer went out
	connecting, // connector: fi_connect to the offered listener
	accepting,  // acceptor: the peer's shm request was proved and accepted
	connected,  // the shm connection is up
	declined,   // a proof or setup step failed: the core for good
};

// Its ListNode links it into the endpoint's list of connections whose queue stalled
// (the core or rxm had no room): progress retries only those.
class RxmConn : public ListNode {
public:
	explicit RxmConn(RxmEndpoint *ep) : ep(ep) {}
	RxmConn(const RxmConn &) = delete;
	RxmConn &operator=(const RxmConn &) = delete;
	bool backlog_listed() const { return linked(); }

	RxmEndpoint *ep;
	struct fid_ep *core_ep = nullptr;
	ConnState state = ConnState::connecting;
	PeerName peer_name;             // canonical core address of the peer's passive endpoint
	EndpointIdentity peer_identity; // from its CM data
	bool receive_only = false;      // the accepted half of a connection to ourselves
	fi_addr_t source = FI_ADDR_NOTAVAIL; // AV entry of the peer (FI_SOURCE)
	size_t peer_eager_size = 0;     // largest eager payload the peer's buffers take
	uint32_t id = 0;                // ours: peers stamp it on messages (shared receive buffers)
	uint32_t peer_conn_id = 0;      // the peer's, stamped on what we send
	// Given to its core endpoints (tcp/shm) to report with the peer's RMA writes carrying
	// remote CQ data, so that they name their source (rxm_rma.cpp on_remote_write).
	CoreContext remote_writes{{}, CoreOpKind::remote_write, this};
	uint64_t source_generation = ~0ULL;
	uint64_t source_insertions = ~0ULL; // the AV's insertions when source was found unknown
	uint32_t slot = 0;              // index in the endpoint's conns_ plus one
	bool credit_waiting = false;    // in the endpoint's credit_waiters_
	bool trim_listed = false;       // in the endpoint's trim_candidates_
	// Same-host rendezvous (rxm_cma.h). As receiver: the peer's proved pid, -1 once the proof
	// or a pull failed, 0 not tried. As sender: 1 the peer pulls our rendezvous data by
	// process_vm_readv (our offers then carry no keys), -1 it does not, 0 not known yet.
	int8_t cma_peer_pulls = 0;
	int32_t cma_peer_pid = 0;

	// Same-host switch (rxm_shm.h). Each direction moves on its own: tx_on_shm once our
	// shm_moved marker went out on the core, peer_moved once the peer's arrived.
	ShmState shm_state = ShmState::none;
	struct fid_ep *shm_ep = nullptr;
	bool shm_moved_queued = false;
	bool tx_on_shm = false;
	bool peer_moved = false;
	uint8_t shm_secret[kShmSecretSize] = {};
	Slab shm_rx_slab;
	std::vector<RxBuffer> shm_rx;
	// Messages declined by rxm_shm_direct.cpp that took a receive buffer (shm_rx, or rx
	// with core_inplace) and are not handled yet: later ones wait behind them. Counted in
	// shm's progress (maybe another thread's).
	std::atomic<uint32_t> inplace_rx_in_cq{0};
	bool core_inplace = false; // the core offers this connection's messages in place

	Slab rx_slab;
	std::vector<RxBuffer> rx;
	struct fid_mr *rx_mr = nullptr;
	bool rx_posted = false;

	// Application operation slots and bounce buffers charged to this peer (rxm_share.h).
	uint32_t ops_held = 0;
	uint32_t tx_buffers_held = 0;

	// Unexpected-message budget (FI_OFI_RXM_UNEXPECTED_BUDGET, rxm_unexpected_budget.cpp):
	// bytes buffered for this peer; while held, its stream is not read (core hold ops) or
	// its receive buffers are not reposted (held_rx), so no credits return either.
	size_t unexpected_bytes = 0;
	bool rx_held = false;
	uint32_t reads_in_core = 0; // our rendezvous reads the peer has yet to serve
	std::vector<RxBuffer *> held_rx;

	IntrusiveList<TxOp> backlog;  // in order; the front is the next to hand to the core
	IntrusiveList<TxOp> awaiting; // rendezvous sends waiting for rndv_done

	std::vector<RecvOp *> write_targets; // receives waiting for the sender's rendezvous writes

	// Credit flow control (cores with flow_ctrl ops): receives the peer granted us, and
	// our reposted buffers not yet reported to the peer.
	uint16_t peer_credit_grant = 0; // initial credits from the peer's CM data (0: none)
	SendCredits send_credits;
	CreditReturn credit_return;

	SarReassembly sar;
	RecvOp *sar_target = nullptr;
	Unexpected *sar_unexpected = nullptr;
	uint64_t sar_placed = 0;

	int close_error = 0; // why fail_conn closed it: what the core still held fails with this

	// Until when the connection may take to come up (FI_OFI_RXM_CONN_TIMEOUT); the epoch
	// value means no limit. Cleared once connected.
	std::chrono::steady_clock::time_point deadline{};
	// Rejected as a duplicate (the peer still holds our previous, dead connection): when to
	// ask again. The epoch value means no retry is planned.
	std::chrono::steady_clock::time_point retry_at{};
	// When probe_connection last tested this connection for another claimant of its name.
	std::chrono::steady_clock::time_point last_probe{};
};

// A core endpoint rxm no longer uses. It stays open until the end of the progress call that
// retired it: closing it from inside an event handler would let the core reuse its memory
// (and so its fid address) for the next endpoint while events and completions of the old one
// still wait in the core EQ and CQ, and those would then be taken for the new one's.
struct RetiredCoreEp {
	RxmConn *conn;
	struct fid_ep *ep;
};

// A core EQ event read early (while retiring endpoints) and kept, in order, until progress
// handles it.
struct CoreEqEvent {
	bool error = false;
	uint32_t event = 0;
	std::vector<uint8_t> entry;    // fi_eq_read's bytes: fi_eq_cm_entry and CM data
	fi_eq_err_entry err{};         // err.err_data points into err_data
	std::vector<uint8_t> err_data;

	fid_t fid() const
	{
		return error ? err.fid : reinterpret_cast<const fi_eq_cm_entry *>(entry.data())->fid;
	}
};

// Asks a core endpoint of the connection to name it on the peer's RMA writes with remote CQ
// data (conn->remote_writes). A core that does not know the option is fine (the writes then
// report no source), any other error is returned.
int offer_remote_write_context(struct fid_ep *core_ep, RxmConn *conn);

} // namespace rxm

#endif
