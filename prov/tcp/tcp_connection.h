// Connection: the data stream of one connected endpoint. It frames operations with the wire
// header (tcp_wire.h), streams payloads between the socket and user or registered memory,
// matches incoming messages to posted receives, serves the peer's RMA requests and
// completes the local ones. It never blocks: progress_tx()/progress_rx() do what the socket
// allows and return.
#ifndef PROV_TCP_TCP_CONNECTION_H
#define PROV_TCP_TCP_CONNECTION_H

#include "prov/tcp/tcp_iov_cursor.h"
#include "prov/tcp/tcp_lazy_pool.h"
#include "prov/tcp/tcp_wire.h"
#include "prov/util/rx_inplace_ops.h"
#include "prov/util/rx_place_ops.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace tcp {

// What a connection needs from its endpoint: completions, registered memory, failure reports.
class ConnectionOwner {
public:
	virtual ~ConnectionOwner() = default;
	// A send-side operation finished (err = 0 or a positive FI_E* code). `op_flags` are
	// the flags it was posted with, `cq_flags` describe the completion (FI_SEND|FI_MSG...).
	virtual void tx_done(void *context, uint64_t op_flags, uint64_t cq_flags, size_t len,
			     int err) = 0;
	// An inject finished: it writes no CQ entry, but counters count it.
	virtual void tx_counted(uint64_t cq_flags) { (void)cq_flags; }
	// A receive-side event: a matched message (or its error), or remote CQ data of an RMA
	// write (context NULL). `olen` = bytes that did not fit.
	virtual void rx_done(void *context, uint64_t op_flags, uint64_t cq_flags, void *buf,
			     size_t len, uint64_t data, int err, size_t olen) = 0;
	// The peer read or wrote registered memory (FI_REMOTE_READ / FI_REMOTE_WRITE).
	virtual void remote_done(uint64_t flags) = 0;
	// Checks a peer's access to registered memory; 0 with *addr and *serial (the
	// registration) set, or -FI_EACCES/-FI_EINVAL.
	virtual int remote_access(uint64_t key, uint64_t offset, uint64_t len, uint64_t access,
				  uint8_t **addr, uint64_t *serial) = 0;
	// Whether that registration still exists: asked before every access to its memory after
	// the first, so fi_close(mr) stops a peer's RMA that is in flight.
	virtual bool region_alive(uint64_t key, uint64_t serial) = 0;
	// The stream ended (peer closed, socket error or protocol violation).
	virtual void connection_lost(int err) = 0;
	// A message waits for a receive on the shared queue: resume reading on the next post.
	virtual void rx_starved() {}
};

class Connection;
struct ThreadStage;

// One posted receive.
struct RxEntry {
	void *context = nullptr;
	uint64_t op_flags = 0;        // as posted (FI_COMPLETION, FI_MULTI_RECV, ...)
	iovec iov[IovCursor::kMaxSegments]{};
	size_t iov_count = 0;
	size_t capacity = 0;
	size_t multi_offset = 0;      // FI_MULTI_RECV: bytes already consumed
	// The stream filling it after taking it off a shared queue (nullptr while queued):
	// a message that finds the queue empty looks here for a stalled holder to park.
	Connection *holder = nullptr;
	RxEntry *next = nullptr;
};

enum class TxKind : uint8_t { msg, write, read, ack, read_response };

// One operation travelling to the peer (or a response the peer asked for).
struct TxEntry {
	TxKind kind = TxKind::msg;
	bool in_use = false;
	bool needs_response = false;     // completes on the peer's ack or read response
	bool awaiting_response = false;  // sent, response not yet in
	bool silent = false;             // inject calls: no successful completion
	uint64_t op_flags = 0;           // as posted, handed back with the completion
	uint64_t id = 0;                 // wire id: pool slot | generation << 32
	void *context = nullptr;
	uint64_t cq_flags = 0;           // FI_SEND|FI_MSG, FI_RMA|FI_WRITE, FI_RMA|FI_READ
	size_t len = 0;
	uint8_t header[kWireHeaderSize]{};
	IovCursor out;                   // header + payload still to write
	IovCursor read_into;             // reads: where the response lands
	uint8_t *inject = nullptr;       // inline copy for FI_INJECT (pool storage)
	// Read responses sent from registered memory: the registration, checked before each
	// send; `started` once any byte went out (after that the stream cannot be re-framed).
	uint64_t region_key = 0;
	uint64_t region_serial = 0;
	bool started = false;
	TxEntry *next = nullptr;
};

// Fixed-size pool handing out TxEntry slots without allocating on the data path (slots are
// built on first use, see LazyPool).
class TxPool {
public:
	TxPool(size_t entries, size_t inject_size);
	TxEntry *get();
	void put(TxEntry *e);
	// The entry a peer's ack/read response names, or nullptr if it names none of ours.
	TxEntry *find_awaiting(uint64_t id);
	size_t available() const { return entries_.available(); }
	size_t capacity() const { return entries_.capacity(); }
	template <class Fn>
	void for_each_in_use(Fn fn)
	{
		for (size_t i = 0; i < entries_.made(); i++)
			if (entries_.at(i)->in_use)
				fn(entries_.at(i));
	}

private:
	LazyPool<TxEntry> entries_;
	size_t inject_size_;
	LazyBytes inject_storage_;
	uint32_t generation_ = 1;
};

// The owner of a shared receive context who is offered every message first
// (prov/util/rx_place_ops.h): it may take the message into buffers of its own.
struct RxPlacer {
	ofi_rx_place_fn place = nullptr;
	void *arg = nullptr;
	size_t head_len = 0;
};

// Posted receives in order: a connection's own, or those of a shared receive context
// (TcpSrx) that several connections take from.
class RxQueue {
public:
	explicit RxQueue(size_t capacity) : entries_(capacity) {}
	RxPlacer placer; // shared contexts only
	// Checks and queues a receive: 0, -FI_EINVAL or -FI_EAGAIN (full).
	int post(const iovec *iov, size_t count, void *context, uint64_t op_flags);
	RxEntry *head() const { return head_; }
	void pop_head();
	void push_front(RxEntry *r);   // a receive taken but not completed goes back first
	// Unlinks the receive posted with `context` (skipping `busy`); nullptr if none.
	RxEntry *unlink(void *context, const RxEntry *busy);
	void release(RxEntry *r)
	{
		r->holder = nullptr;
		entries_.put(r);
	}
	// Every receive slot ever handed out, queued, taken or free (free ones have no holder).
	template <class Fn>
	void for_each_slot(Fn fn)
	{
		for (size_t i = 0; i < entries_.made(); i++)
			fn(entries_.at(i));
	}
	size_t available() const { return entries_.available(); }
	bool empty() const { return head_ == nullptr; }

private:
	LazyPool<RxEntry> entries_;
	RxEntry *head_ = nullptr, *tail_ = nullptr;
};

// One send-side operation as the endpoint hands it over.
struct PostArgs {
	const iovec *iov = nullptr;
	size_t count = 0;
	void *context = nullptr;
	uint64_t op_flags = 0;   // handed back with the completion
	uint64_t data = 0;       // remote CQ data, sent when op_flags has FI_REMOTE_CQ_DATA
	bool copy = false;       // FI_INJECT: copy the payload before returning
	bool want_ack = false;   // FI_DELIVERY_COMPLETE: complete when the peer has it
	bool silent = false;     // fi_inject*: no successful completion
	// Only queue it: the owner calls progress_tx() soon (its next progress pass), so a
	// burst leaves in one sendmsg. Sent at once anyway when the queued sends reach the
	// gather limits of one sendmsg.
	bool defer = false;
};

struct Limits {
	size_t tx_size = 256;
	size_t rx_size = 256;
	size_t inject_size = 128;
};

class Connection {
public:
	Connection(ConnectionOwner &owner, const Limits &limits);
	~Connection();

	// Starts streaming on a connected, non-blocking socket (ownership moves here).
	void attach(int fd);
	int fd() const { return fd_; }
	bool active() const { return fd_ >= 0 && !failed_; }
	// Stops the stream (local shutdown, failed connect, lost peer): queued and outstanding
	// operations and the receives posted to this endpoint complete with FI_ECANCELED, and
	// later posts fail with -FI_ENOTCONN.
	void stop();

	// Posting; all return 0 or -FI_EAGAIN (queue full) / -FI_EINVAL / -FI_ENOTCONN.
	// Operations posted before attach() wait in the queue.
	int post_recv(const iovec *iov, size_t count, void *context, uint64_t op_flags);
	int cancel_recv(void *context);
	// Takes receives from `queue` (a shared receive context) instead of its own; set
	// before any receive is posted. nullptr goes back to its own queue.
	void use_shared_rx(RxQueue *queue);
	bool shared_rx() const { return rxq_ != &own_rx_; }
	int post_msg(const PostArgs &args);
	bool inject_at_once(const PostArgs &args, size_t total);
	// prov/util/framed_send_ops.h: hdr then the payload pieces as one message, in one
	// sendmsg now, completing as an inject. 0 when every byte left the caller's buffers
	// (sent, or the part the socket did not take copied for the next progress_tx);
	// -FI_EAGAIN with nothing changed when it does not apply (not streaming, something
	// queued, the socket full, a frame over kFramedMax).
	int send_framed(const void *hdr, size_t hdr_len, const iovec *payload, size_t count,
			size_t payload_len);
	int post_write(const PostArgs &args, const fi_rma_iov &target);
	int post_read(const PostArgs &args, const fi_rma_iov &target);
	size_t tx_free() const { return tx_pool_.available(); }
	// Nothing of ours in flight: no send, RMA or response queued or awaiting its answer.
	bool tx_idle() const { return !tx_head_ && tx_pool_.available() == tx_pool_.capacity(); }
	size_t rx_free() const { return rxq_->available(); }

	void set_min_multi_recv(size_t bytes) { min_multi_recv_ = bytes; }
	size_t min_multi_recv() const { return min_multi_recv_; }

	// Progress; both return quickly. progress_rx reads only while it can deliver and says
	// whether the socket gave any bytes (the engine's busy-polling shortcut keeps a stream
	// that does "hot").
	void progress_tx();
	bool progress_rx();
	// EPOLLOUT is wanted only while the socket refused bytes (a held-back send is the
	// owner's to flush, and asking for it would cost an epoll_ctl per burst).
	bool wants_write() const { return fd_ >= 0 && !failed_ && tx_head_ && tx_blocked_; }
	// Sends posted with PostArgs::defer wait for progress_tx().
	bool holds_sends() const { return deferred_iov_ > 0 && tx_head_; }
	// Anything waits in the send queue (progress_tx has work).
	bool tx_queued() const { return tx_head_ != nullptr; }
	// True while the socket is not read: a decoded message waits for a posted receive, or
	// a request waits for a free response slot (freed as responses are sent).
	bool rx_paused() const
	{
		return rx_state_ == RxState::pending || rx_state_ == RxState::parked_waiting;
	}

	// The peer left a frame partly received (header or payload; parked counts, a message
	// waiting for a local receive does not): what tcp_stall_watch.h watches.
	bool mid_frame() const
	{
		return active() && (rx_state_ == RxState::payload || rx_state_ == RxState::parked ||
				    (rx_state_ == RxState::header && header_got_ > 0));
	}
	// Socket reads that returned bytes so far.
	uint64_t rx_reads() const { return rx_reads_; }
	// Stalled past FI_TCP_RX_STALL_TIMEOUT: fails the stream (the receive being filled
	// completes with FI_ETIMEDOUT) unless bytes wait in the socket; true when failed.
	bool fail_if_stalled();
	// A stream holding a shared receive mid-message with nothing readable now (a header
	// whose payload has not come counts): parking it gives the receive back.
	bool stalled_on_shared_receive() const;
	// Moves the bytes placed so far into an allocation of exactly their size and returns
	// the receive to the front of the shared queue; false (nothing changed) if out of memory.
	bool park_shared_receive();
	// While held, the next incoming message and all after it stay in the socket (the
	// owner's rx_hold_ops.h extension); progress_rx after releasing reads on.
	void hold_messages(bool held) { messages_held_ = held; }
	// prov/util/rx_inplace_ops.h: who is shown each arriving message first (consume NULL:
	// nobody); one lying whole in the read stage may be taken there.
	void set_consumer(ofi_rx_inplace_fn consume, void *arg)
	{
		consume_ = consume;
		consume_arg_ = consume ? arg : nullptr;
	}

private:
	// `pending`: a decoded header waits for a posted receive or a free response slot.
	// `parked`: a message stalled mid-payload gave its shared receive back (bytes so far in
	// parked_); it takes one again when its socket has data (`parked_waiting`: it has data,
	// no receive is free, the socket is not read until one is posted).
	enum class RxState { header, pending, payload, parked, parked_waiting };
	// `placed`: a message the shared context's placer took into its own buffers.
	enum class RxTarget { message, placed, write, read_response, discard };

	void enqueue(TxEntry *e);
	// One sendmsg carries at most this many buffers (well under IOV_MAX) and stops adding
	// operations past kGatherBytes (the socket takes about that much at once), or past
	// kGatherLargeBytes once it holds an operation of kGatherLargeOp bytes or more.
	// Loopback TCP moves bytes at very different rates depending on the size of the sends
	// (tcp_baseline stream, one size per run: 64 KiB sends 2.0 or 7.1 GB/s, 128 KiB 3.2 or
	// 7.6, 224 KiB 10.6): fi_bw -w 64 with 32 KiB messages gathered 7 to a 224 KiB
	// sendmsg spent 59 ms in sendmsg per 271 MB against raw TCP's 46 ms in 32 KiB sends.
	// Sendmsgs of about 64 KiB ran steadily faster at 8-32 KiB (loaded chrt medians, main
	// -> 64 KiB: 8 KiB 4.0 -> 4.8 GB/s, 16 KiB 4.2 -> 5.5, 32 KiB 4.3 -> 6.0; 4 KiB as
	// before); 128 KiB doubled 32 KiB and lost a third at 16 KiB. A window of small sends
	// (64 of 1 KiB, 70 KB) still leaves in one call.
	static constexpr size_t kGatherIov = 128;
	static constexpr size_t kGatherBytes = 256 * 1024;
	static constexpr size_t kGatherLargeBytes = 64 * 1024;
	static constexpr size_t kGatherLargeOp = 2048;
	TxEntry *new_response(WireOp op, uint64_t id, int status, uint64_t size);
	TxEntry *new_request(TxKind kind, const PostArgs &args, size_t total);
	void append_payload(TxEntry *e, const PostArgs &args, size_t total);
	void complete_tx(TxEntry *e, int err);
	// Releases r, reports err (FI_ECANCELED: nothing came for it).
	void complete_cancelled(RxEntry *r, int err = FI_ECANCELED);
	void flush_own_recvs();
	bool start_operation();           // header decoded: decide where the payload goes
	bool start_message();
	bool start_write();
	bool start_read_request();
	bool start_read_response();
	bool handle_ack();
	void finish_payload();
	void protocol_error(const char *why);
	void lost(int err);               // stream failure: stop() and tell the owner
	void reset_rx();
	// Shared queue empty: parks another stream's stalled receive; true if one came back.
	bool reclaim_shared_receive();
	// State `parked`: takes a shared receive again once the socket has data.
	bool resume_parked();
	void fill_from_receive(RxEntry *r, uint64_t size);
	// Offers the message whose header was just read to the shared context's placer (r: the
	// receive it takes otherwise); true when the placer took it (into_ is then its buffers).
	bool offer_to_placer(RxEntry *r, bool may_take);
	// Shows the message whose header was just read to the consumer (r: the receive it takes
	// otherwise); true when the consumer took it from the stage (the stream is past it).
	bool offer_to_consumer(RxEntry *r);
	// A placed message the stream will not finish: its taker hears of it (FI_ECANCELED).
	void cancel_placed();
	// Reads into the current target; returns false when the socket has no more data.
	bool read_payload();
	bool read_header();
	bool decode_read_header(const uint8_t *bytes); // false: the stream was dropped
	// Bytes read from the socket into the stage and not consumed yet.
	size_t staged() const { return stage_len_ - stage_pos_; }
	// Reads what the socket has (up to `want` bytes, at most kStageSize) into the empty
	// stage; false when it has nothing now or the stream ended.
	bool fill_stage(size_t want);
	// How much a read for the next header asks for (decode_read_header): kStageTail after
	// a message larger than the stage (its successor is likely large too: its payload goes
	// straight to its buffer, not through the stage), else kStageSize.
	size_t header_read_ = kStageSize;
	// Maps a socket read result: true for data, false for "nothing now" or a lost peer.
	bool socket_result(ssize_t n, size_t asked);

	ConnectionOwner &owner_;
	Limits limits_;
	int fd_ = -1;
	bool failed_ = false;
	size_t min_multi_recv_ = 0;
	bool messages_held_ = false;
	ofi_rx_inplace_fn consume_ = nullptr;
	void *consume_arg_ = nullptr;

	TxPool tx_pool_;         // operations posted by the application
	TxPool response_pool_;   // acks and read responses owed to the peer
	TxEntry *tx_head_ = nullptr, *tx_tail_ = nullptr;
	bool tx_blocked_ = false;      // the last sendmsg left bytes unsent
	// Held back since the last progress_tx (PostArgs::defer): buffers and bytes, checked
	// against the gather limits.
	size_t deferred_iov_ = 0;
	size_t deferred_bytes_ = 0;

	// send_framed: the largest frame (our header, the caller's, its payload) it takes; a
	// payload up to kFramedCopy is copied behind the headers (one buffer for the kernel),
	// a larger one goes from the caller's pieces. The unsent rest of a frame the socket
	// took only in part waits in spill_ (allocated the first time that happens, at least
	// kSpillMin, grown for a larger rest up to kFramedMax; one rest at most: a framed send
	// needs an empty queue, and the rest is the queue's head until sent).
	// 64 KiB of payload, rxm's largest eager message over tcp (FI_OFI_RXM_BUFFER_SIZE's
	// stream default): rxm's 8 KiB ping-pong went the queued way (an op, tcp's entry and
	// completion read back) at 4346 instructions a message, 2803 framed; its 32 and 64 KiB
	// ones at 4958 and 4953, framed 3360 and 3364 (rxm_cost tagged domain, both sides).
	static constexpr size_t kFramedMax = kShortHeaderSize + 128 + 65536;
	static constexpr size_t kFramedHeaderMax = 128;
	static constexpr size_t kFramedCopy = 1024;
	static constexpr size_t kSpillMin = kShortHeaderSize + 128 + 16384;
	std::unique_ptr<uint8_t[]> spill_;
	size_t spill_size_ = 0;

	RxQueue own_rx_;
	RxQueue *rxq_ = &own_rx_;

	RxState rx_state_ = RxState::header;
	uint8_t header_buf_[kWireHeaderSize]{};
	size_t header_got_ = 0;
	WireHeader header_{};
	RxTarget target_ = RxTarget::discard;
	IovCursor into_;              // where payload bytes go
	uint64_t discard_left_ = 0;   // payload bytes to drop after `into_` is full
	uint64_t message_size_ = 0;
	uint64_t placed_ = 0;         // bytes of the message that fit the receive
	TxEntry *reply_ = nullptr;    // ack owed once this payload is in
	TxEntry *read_ = nullptr;     // our read being answered
	RxEntry *matched_ = nullptr;  // receive being filled
	bool matched_taken_ = false;  // unlinked from a shared queue while being filled
	void *matched_buf_ = nullptr;
	void *placed_context_ = nullptr; // RxTarget::placed: the completion's context
	int write_status_ = 0;
	std::unique_ptr<uint8_t[]> parked_;  // placed bytes of a parked message
	size_t parked_len_ = 0;
	uint64_t parked_got_ = 0;            // bytes of it read from the socket (placed+dropped)
	uint64_t write_key_ = 0;      // the registration a peer's write is placed into
	uint64_t write_serial_ = 0;
	// The write's region was closed (fi_close(mr)) mid-payload: drop the rest, answer an error.
	void abandon_write();
	// A read response's region was closed: error it before it starts, else end the stream.
	bool abandon_read_response(TxEntry *e);

	// A message arrives with its header in one recv into the stage (and the next headers
	// with it) when header and payload fit the stage: 16 KiB + 512 holds rxm's messages up
	// to 16 KiB with both headers (at 4 KiB, rxm's 4 KiB message, 4200 bytes with the
	// headers, took a second recv for its last 104 bytes). A payload still missing
	// kDirectRead bytes or more once the stage is used up goes straight from the socket to
	// its buffer, with a kStageTail-byte stage behind it: the next message's headers (tcp's
	// and rxm's, 104 bytes) arrive with the same call, so a stream of large messages costs
	// one read per message, and only those few hundred bytes of each go through the stage
	// and a copy (a 4 KiB tail copied a quarter of every 16 KiB message).
	// The stage is one per thread (allocated on its first use); a connection keeps only
	// unread leftovers. During progress_rx the stage is the thread's shared one; bytes left
	// in it when the call ends move to `kept_` (allocated only then and of just that size),
	// so an idle connection carries none and a waiting one only what it read. The next call
	// reads them where they are (no copy back) and takes a stage again only to read the
	// socket once they are used up: a window read at once and handed out one receive at a
	// time (rxm reposts each shared buffer after use) is not copied again per message.
	static constexpr size_t kStageSize = 16384 + 512;
	static constexpr size_t kStageTail = 512;
	static constexpr size_t kDirectRead = 4096;
	enum class StageKind : uint8_t { none, kept, shared, own };
	uint8_t *stage_ = nullptr;
	StageKind stage_kind_ = StageKind::none;
	std::unique_ptr<uint8_t[]> kept_;
	std::unique_ptr<uint8_t[]> own_stage_;  // a nested call's (the thread's is in use)
	// The calling thread's stage, looked up once per progress_rx: each access to a
	// thread_local of a shared library is a __tls_get_addr call, and a pass that found
	// the socket empty made six of them (~15 % of an empty busy-polling pass).
	ThreadStage *thread_stage_ = nullptr;
	void take_stage();
	void put_stage();
	// Makes stage_ a full, empty stage to read the socket into (the kept leftovers are
	// used up by then); false (the stream failed) when no memory is left for one.
	bool fresh_stage();
	void read_stream();
	size_t stage_pos_ = 0;
	size_t stage_len_ = 0;
	// A read of this progress_rx call came back short, so the socket was empty: don't ask
	// it again in the same call (saves the EAGAIN system call after every message).
	bool drained_ = false;
	// Some read of this progress_rx call returned bytes.
	bool got_bytes_ = false;
	uint64_t rx_reads_ = 0;
	// Why the stream stopped, for the receive it was filling (0: FI_ECANCELED).
	int stop_err_ = 0;
};

} // namespace tcp

#endif
