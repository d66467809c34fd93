// The in-flight objects of an rxm endpoint: buffers handed to the core, application sends and
// receives, and messages waiting for a receive. Every object the core sees as op_context
// starts with a CoreContext, whose kind tells the progress loop what completed.
#ifndef OFI_PROV_RXM_OPS_H
#define OFI_PROV_RXM_OPS_H

#include "prov/rxm/rxm_list.h"
#include "prov/rxm/rxm_matcher.h"
#include "prov/rxm/rxm_multi_recv.h"
#include "prov/rxm/rxm_wire.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <vector>

namespace rxm {

class RxmConn;
struct TxOp;
struct RecvOp;

// TxOp slots only internal control messages may use.
constexpr size_t kControlReserve = 256;
// Most iovs rxm hands the core in one send: a header and up to 4 application buffers.
constexpr size_t kMaxCoreIov = 1 + kRndvMaxSegments;
// Bounce buffers only internal control messages may use.
constexpr size_t kControlBufferReserve = 16;

// Internal flag on send paths: fi_inject* never generate a completion.
constexpr uint64_t kNoCompletionFlag = 1ULL << 63;

// rx_direct: an eager message the core places straight into a RecvOp (rxm_direct_recv.cpp).
// remote_write: the connection's own context, reported by the core for a peer's RMA write
// with remote CQ data (OFI_OPT_REMOTE_WRITE_CONTEXT, prov/util/remote_write_context.h).
enum class CoreOpKind : uint8_t { rx_buffer, tx_buffer, rma, rndv_read, rx_direct, remote_write };

struct CoreContext {
	fi_context2 core_reserved; // the core may use this (FI_CONTEXT/FI_CONTEXT2 modes)
	CoreOpKind kind;
	void *owner; // the TxOp / RecvOp of rma and rndv_read operations, the RxmConn of remote_write
};

// A receive buffer posted to one core connection.
struct RxBuffer {
	CoreContext core;
	RxmConn *conn;
	uint8_t *data;
	bool on_shm = false; // posted to the connection's shm endpoint (rxm_shm.h)
};

// A bounce buffer carrying one wire message (header + payload) to the core.
struct TxBuffer {
	CoreContext core;
	TxOp *op;       // owner; nullptr for internal control messages
	RxmConn *conn;  // set while the core holds the buffer
	RxmConn *charged; // the peer whose share it counts against (application buffers)
	uint8_t *data;
	size_t len;
	TxBuffer *next_free;
};

enum class TxKind : uint8_t {
	eager,     // one prepared buffer
	sar,       // segments copied from the application's buffers as the core takes them
	rndv,      // request sent; completes when the receiver reports rndv_done
	control,   // internal message (rndv_done, credits), no application completion
	rma_write, // passthrough to the core connection
	rma_read,
	atomic,    // request sent; completes with the target's atomic_response
};

// One application send/RMA, or an internal control message.
struct TxOp : ListNode {
	CoreContext core;   // for rma ops handed directly to the core
	TxKind kind;
	bool in_use;
	bool report;        // write a completion (selective completion / inject decide)
	bool failed;
	uint32_t generation; // makes msg_id unique across reuse of this slot
	uint32_t index;
	void *context;
	uint64_t cq_flags;  // FI_SEND|FI_MSG / FI_TAGGED / FI_RMA|FI_WRITE ...
	RxmConn *conn;
	RxmConn *charged;   // the peer whose share it counts against (application ops)
	WireHeader hdr;     // template for the wire header(s)
	iovec iov[kRndvMaxSegments];
	void *desc[kRndvMaxSegments]; // core descriptors
	size_t iov_count;
	uint64_t total_len;
	uint64_t queued_len;   // SAR: bytes already handed to the core
	uint32_t outstanding;  // core operations not yet completed
	TxBuffer *prepared;    // eager/control/rndv: the encoded message
	bool zero_copy;        // eager: prepared holds only the header, the payload is iov
	// eager: may go out by the core's fi_inject (no completion level beyond inject asked),
	// which frees the bounce buffer at once: the op completes without a core completion.
	bool core_inject;
	uint64_t rndv_key[kRndvMaxSegments];
	fid_mr *own_mr[kRndvMaxSegments]; // registrations rxm made for this op
	fid_mr *own_shm_mr[kRndvMaxSegments]; // their shm twins (request sent over shm)
	size_t own_mr_count;
	bool own_mr_bound;                // bound to the connection the request went out on
	// rndv: its one source is rxm's registration, bound as a window-like key the
	// receiver may invalidate (wire_flag::rndv_invalidate). control (rndv_done): invalidate
	// the peer's key peer_key with it (OFI_SEND_INVALIDATE).
	bool key_invalidatable;
	uint64_t peer_key;
	bool writes_on_shm;               // rndv write: the receiver exposed its buffer on shm
	int error;
	// RMA
	uint64_t rma_addr;
	uint64_t rma_key;
	// Write-based rendezvous: the receiver's buffers and how far the writes got.
	RndvSegment remote[kRndvMaxSegments];
	size_t remote_count;
	uint64_t write_total;
	uint64_t write_issued;
	bool writing;
	// Atomics: how many fetched bytes the answer brings; they are scattered over iov.
	size_t result_len;

	// Readies a pooled op for a new operation (a field added above must be reset here).
	// Everything goes back to its initial value except the arrays, which are only read
	// below their counts, each written before the count grows: iov, desc and rndv_key
	// below iov_count, own_mr and own_shm_mr below own_mr_count (free_op's close_own_mrs
	// left every twin it counted null), remote below remote_count; core_reserved is the
	// core's. Assigning a value-initialised TxOp instead cleared ~450 bytes per message.
	void reset(uint32_t slot, uint32_t next_generation)
	{
		prev = next = nullptr;
		core.kind = CoreOpKind::rma;
		core.owner = this;
		kind = TxKind::eager;
		in_use = true;
		report = false;
		failed = false;
		generation = next_generation;
		index = slot;
		context = nullptr;
		cq_flags = 0;
		conn = nullptr;
		charged = nullptr;
		hdr = WireHeader{};
		iov_count = 0;
		total_len = 0;
		queued_len = 0;
		outstanding = 0;
		prepared = nullptr;
		zero_copy = false;
		core_inject = false;
		own_mr_count = 0;
		own_mr_bound = false;
		key_invalidatable = false;
		peer_key = 0;
		writes_on_shm = false;
		error = 0;
		rma_addr = 0;
		rma_key = 0;
		remote_count = 0;
		write_total = 0;
		write_issued = 0;
		writing = false;
		result_len = 0;
	}
};

// One application receive (or one slice of a multi-receive buffer).
struct RecvOp {
	PostedRecv match;      // matcher linkage; match.owner == this
	CoreContext core;      // rendezvous reads
	bool in_use;
	bool tagged;
	bool multi;            // a multi-receive buffer (stays posted)
	RecvOp *multi_parent;  // set on slices
	MultiRecvBuffer multi_buf;
	void *context;
	uint64_t op_flags;
	iovec iov[kRndvMaxSegments];
	void *desc[kRndvMaxSegments];
	size_t iov_count;
	size_t capacity;
	// The message being placed.
	RxmConn *conn;
	fi_addr_t source;
	uint64_t tag;
	uint64_t cq_data;
	uint16_t wire_flags;
	uint64_t total_len;
	uint64_t msg_id;
	// Rendezvous state.
	RndvSegment rndv[kRndvMaxSegments];
	size_t rndv_count;
	uint64_t rndv_issued;     // bytes for which reads were posted
	uint32_t reads_outstanding;
	// When the read in the core counts as not served (FI_OFI_RXM_RNDV_READ_TIMEOUT).
	std::chrono::steady_clock::time_point read_deadline;
	fid_mr *own_mr[kRndvMaxSegments];
	fid_mr *own_shm_mr[kRndvMaxSegments]; // shm twins (buffer exposed on a moved connection)
	size_t own_mr_count;
	int error;
	// Direct receive: the core is placing the message's payload here (core.kind rx_direct).
	bool direct_in_core;
	RecvOp *next_free;

	// Readies a pooled receive (a field added above must be reset here): as TxOp::reset,
	// the arrays are left as they are, read only below their counts (iov and desc below
	// iov_count, rndv below rndv_count, own_mr and own_shm_mr below own_mr_count).
	void reset()
	{
		match = PostedRecv{};
		match.owner = this;
		core.kind = CoreOpKind::rndv_read;
		core.owner = this;
		in_use = true;
		tagged = false;
		multi = false;
		multi_parent = nullptr;
		multi_buf = MultiRecvBuffer{};
		context = nullptr;
		op_flags = 0;
		iov_count = 0;
		capacity = 0;
		conn = nullptr;
		source = FI_ADDR_NOTAVAIL;
		tag = 0;
		cq_data = 0;
		wire_flags = 0;
		total_len = 0;
		msg_id = 0;
		rndv_count = 0;
		rndv_issued = 0;
		reads_outstanding = 0;
		read_deadline = {};
		own_mr_count = 0;
		error = 0;
		next_free = nullptr;
	}
};

// A message that arrived before a matching receive.
struct Unexpected {
	UnexpectedMsg match; // match.owner == this
	WireOp protocol;     // eager, sar_segment or rndv_request
	RxmConn *conn;
	uint64_t cq_data;
	uint16_t wire_flags;
	uint64_t total_len;
	uint64_t msg_id;
	bool complete;       // all bytes buffered (eager, finished SAR)
	std::vector<uint8_t> data;
	RndvSegment rndv[kRndvMaxSegments];
	size_t rndv_count;
	uint64_t cma_addr[kRndvMaxSegments]; // virtual addresses of a same-host offer
	size_t charged = 0;  // bytes counted against the peer's unexpected budget
};

} // namespace rxm

#endif
