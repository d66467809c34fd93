// ShmEndpoint: an FI_EP_MSG endpoint over one shared segment (two rings, shm_ring.h).
//
// Lifecycle: idle -> (fi_connect) connecting -> connected, or idle with a ConnRequest handle
// -> (fi_accept) connected; connected -> closed on fi_shutdown, the peer's socket closing or
// a ring violation. The AF_UNIX socket stays open for the connection's life: its hangup is
// how a peer's exit or crash is seen, whatever state its rings are in.
//
// Progress: our doorbell eventfd and the socket are lazy fds in the domain's engine; the
// endpoint is also a progress source, so a busy-polling reader sees ring entries without a
// syscall. A pass drains the receive ring into posted receives and moves queued sends into
// the transmit ring. Only a thread about to sleep (before_sleep) asks the peer for a
// doorbell, for nothing to read or no room to write: a busy pair makes no system call.
// Exception: while an FI_GETWAIT fd of the domain is polled without fi_trywait
// (ProgressEngine::keep_armed), every pass ends armed.
// Every API entry holds the domain lock, like progress does.
//
// RMA (shm_endpoint_rma.cpp, shm_endpoint_target.cpp): the peer never touches our memory. A
// write travels through the ring; we check (key, address, length, access) in the domain's MR
// map, copy it into the region and answer with an ack carrying the verdict. A read is a
// request; we check it and answer with the data through our ring. The initiator keeps each
// operation in a preallocated pending table (tx_size entries) until its answer comes; the
// answers we owe the peer wait in a response queue of the same size, and while it is full we
// read no further request from the peer (the peer stalls only itself).
#ifndef PROV_SHM_SHM_ENDPOINT_H
#define PROV_SHM_SHM_ENDPOINT_H

#include "prov/shm/shm_address.h"
#include "prov/shm/shm_conn_request.h"
#include "prov/shm/shm_domain.h"
#include "prov/shm/shm_provider.h"
#include "prov/shm/shm_segment.h"
#include "prov/util/endpoint.h"
#include "prov/util/progress_engine.h"
#include "prov/util/ring.h"
#include "prov/util/rx_inplace_ops.h"

#include <rdma/fi_rma.h>

#include <sys/uio.h>

#include <memory>
#include <vector>

namespace shm {

// The iovec checks of every data call: at most kIovLimit entries, a base for each non-empty
// one, a total within kMaxMsgSize (returned in *total).
bool valid_iov(const iovec *iov, size_t count, size_t *total);

// Internal op flag: an operation that produces no CQ entry by nature (fi_inject*), counted only.
inline constexpr uint64_t kNoCqEntry = 1ull << 63;

class ShmEndpoint : public util::Endpoint, public util::FdHandler, public util::ProgressSource {
public:
	ShmEndpoint(ShmDomain &domain, const struct fi_info *info, void *context);
	~ShmEndpoint() override;

	// ---- fi_ops / fi_ops_ep ----
	int close() override;
	int getopt(int level, int optname, void *optval, size_t *optlen);
	ssize_t cancel(void *context);
	ssize_t rx_size_left();
	ssize_t tx_size_left();

	// ---- fi_ops_cm (shm_endpoint_cm.cpp) ----
	int getname(void *addr, size_t *addrlen);
	int getpeer(void *addr, size_t *addrlen);
	int connect(const void *addr, const void *param, size_t paramlen);
	int accept(const void *param, size_t paramlen);
	int shutdown(uint64_t flags);
	int peer_pid(pid_t *pid); // SO_PEERCRED of the connection's socket (shm_peer_ops.cpp)
	// util/rx_inplace_ops.h (shm_peer_ops.cpp): messages shown to a consumer in the ring.
	int set_consumer(ofi_rx_inplace_fn consume, void *arg);
	// shm_send_ops.h (shm_endpoint_msg.cpp): [header, payload] into the next slot, or
	// -FI_EAGAIN when that cannot be done at once (the caller takes the plain path).
	ssize_t inject_framed(const void *hdr, size_t hdr_len, const iovec *payload,
			      size_t count, size_t payload_len);
	// ... of a message over several slots (all of them free).
	ssize_t inject_framed_slots(const void *hdr, size_t hdr_len, const iovec *payload,
				    size_t count, size_t payload_len);

	// ---- fi_ops_msg (shm_endpoint_msg.cpp) ----
	ssize_t recv(void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context);
	ssize_t recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      void *context);
	ssize_t recvmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t send(const void *buf, size_t len, void *desc, fi_addr_t dest_addr, void *context);
	ssize_t sendv(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr,
		      void *context);
	ssize_t sendmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t inject(const void *buf, size_t len, fi_addr_t dest_addr);
	ssize_t senddata(const void *buf, size_t len, void *desc, uint64_t data,
			 fi_addr_t dest_addr, void *context);
	ssize_t injectdata(const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr);

	// ---- fi_ops_rma (shm_endpoint_rma.cpp) ----
	ssize_t read(void *buf, size_t len, void *desc, fi_addr_t src_addr, uint64_t addr,
		     uint64_t key, void *context);
	ssize_t readv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      uint64_t addr, uint64_t key, void *context);
	ssize_t readmsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t write(const void *buf, size_t len, void *desc, fi_addr_t dest_addr,
		      uint64_t addr, uint64_t key, void *context);
	ssize_t writev(const struct iovec *iov, void **desc, size_t count, fi_addr_t dest_addr,
		       uint64_t addr, uint64_t key, void *context);
	ssize_t writemsg(const struct fi_msg_rma *msg, uint64_t flags);
	ssize_t inject_write(const void *buf, size_t len, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key);
	ssize_t writedata(const void *buf, size_t len, void *desc, uint64_t data,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key, void *context);
	ssize_t inject_writedata(const void *buf, size_t len, uint64_t data, fi_addr_t dest_addr,
				 uint64_t addr, uint64_t key);

	// ---- progress (shm_endpoint_rx.cpp, shm_endpoint_tx.cpp) ----
	void on_fd_ready(int fd, uint32_t events) override;
	void progress() override;
	// Asks the peer for a doorbell (ring full with something to send, or nothing to
	// read) and vetoes the sleep when the rings changed meanwhile.
	bool before_sleep() override;

private:
	enum class State { idle, connecting, connected, closed };

	enum class TxKind : uint8_t { msg, write, read_request, read_response, ack };
	// Something to put into the transmit ring: an application operation (tx_queue_) or an
	// answer we owe the peer (responses_).
	struct TxEntry {
		TxKind kind = TxKind::msg;
		iovec iov[kIovLimit];
		size_t count = 0;
		size_t total = 0;         // payload bytes
		size_t sent = 0;          // bytes already in the ring
		bool started = false;     // first slot written (a 0-byte message has one slot)
		uint64_t data = 0;
		bool has_data = false;
		void *context = nullptr;
		uint64_t flags = 0;
		uint64_t id = 0;          // RMA: our pending id, or the peer's id we answer
		uint64_t rma_key = 0;     // write/read request: the target region; read
		uint64_t rma_addr = 0;    // response: the key of the region we copy from
		size_t rma_len = 0;       // read request: bytes asked for
		uint64_t serial = 0;      // read response: the registration (MrMap::alive)
		uint32_t status = 0;      // ack / read response: positive FI_E* or 0
	};
	// An RMA operation of ours between posting and the target's answer.
	struct Pending {
		bool busy = false;
		bool sent = false;        // the whole request is in the ring: an answer may come
		bool is_read = false;
		uint32_t generation = 0;  // bumped on release: a stale id never matches
		void *context = nullptr;
		uint64_t flags = 0;
		size_t len = 0;
		iovec iov[kIovLimit];     // read: where the data goes
		size_t count = 0;
	};
	struct RxEntry {
		iovec iov[kIovLimit];
		size_t count = 0;
		size_t capacity = 0;
		void *context = nullptr;
		uint64_t flags = 0;
		bool canceled = false;
	};
	// The message being received (it may span many slots).
	// The operation being received (it may span many slots).
	struct Incoming {
		bool active = false;
		uint32_t op = 0;
		size_t total = 0;
		size_t received = 0;
		uint64_t data = 0;
		bool has_data = false;
		uint64_t id = 0;          // write: the peer's id to ack
		uint8_t *dest = nullptr;  // write: where its first byte goes
		uint64_t key = 0;         // write: the region (checked alive before each slot)
		uint64_t serial = 0;
		uint32_t status = 0;      // write: our verdict; read response: the peer's
		Pending *pending = nullptr; // read response: the read it answers
	};

	ShmDomain &shm_domain() { return static_cast<ShmDomain &>(domain()); }
	int check_can_post() const;
	// fi_inject*: 0 when the data can go into the ring before the call returns.
	int check_inject_room();
	ssize_t post_send(const iovec *iov, size_t count, void *context, uint64_t flags,
			  uint64_t data);
	ssize_t post_recv(const iovec *iov, size_t count, void *context, uint64_t flags);
	// Writes a message with nothing queued before it and room for all its slots into the
	// ring, straight from the caller's iovecs, and completes it; false when it must queue.
	bool send_in_slots(const iovec *iov, size_t count, size_t total, void *context,
			   uint64_t flags, uint64_t data);
	// shm_endpoint_cm.cpp
	// Decides how our sleeps fence and writes it into our word of `segment` (before the
	// handshake message that hands the segment or the accept to the peer).
	void declare_sleep_barrier(Segment &segment, bool connector);
	void start_connected(int sock, std::unique_ptr<Segment> segment, int peer_bell,
			     bool connector);
	void on_reply();
	void on_socket_event();
	void connect_failed(int err, const void *data, size_t len);
	// Ends the connection: outstanding operations complete with FI_ECANCELED, then
	// FI_SHUTDOWN (err != 0: logged as the cause).
	void connection_lost(int err);
	void release_connection();
	// shm_endpoint_rx.cpp: false when the peer broke the protocol (connection failed).
	bool drain_rx();
	bool drain_rx_slots(); // drain_rx's pass over the ring, without freeing the slots read
	bool take_slot(const SlotHeader &header, const uint8_t *payload);
	// Shows the message to the consumer; returns the slots it took where they lie (the
	// message's one slot, or all of its slots when they have all arrived: `ready` counts
	// the slots readable from this one on), 0 when declined.
	uint32_t consumed_in_place(const SlotHeader &header, const uint8_t *payload,
				   uint32_t ready);
	// consumed_in_place of anything but a whole one-slot message (out of line).
	uint32_t offered_not_whole(const SlotHeader &header, const uint8_t *payload,
				   uint32_t ready);
	void *next_rx_context(); // the receive a declined message takes, or nullptr
	// A message over several slots, all among the `ready` ones: its payloads as pieces
	// (at most kSlots), each continuation header copied out and checked; returns the
	// slot count, or 0 when a slot is missing or not a valid continuation.
	uint32_t message_pieces(const SlotHeader &first, const uint8_t *payload, uint32_t ready,
				iovec *pieces) const;
	void finish_incoming();
	// Whether the next operation in the ring, of type `op`, can be taken now.
	bool ready_for(uint32_t op);
	bool valid_slot(const SlotHeader &h) const;
	void place_message(const uint8_t *payload, size_t len);
	// shm_endpoint_target.cpp: the target side of RMA.
	void start_write(const SlotHeader &h);
	void place_write(const uint8_t *payload, size_t len);
	void finish_write(const Incoming &write);
	void answer_read(const SlotHeader &h);
	// shm_endpoint_rma.cpp: the initiator side.
	ssize_t post_rma(TxKind kind, const iovec *iov, size_t count, const fi_rma_iov *rma,
			 size_t rma_count, void *context, uint64_t flags, uint64_t data);
	// The pending operation `id` names, if it is one of ours awaiting an answer of this kind.
	Pending *pending_for(uint64_t id, bool is_read);
	void complete_pending(Pending &p, uint32_t status);
	void place_read(const uint8_t *payload, size_t len);
	// shm_endpoint_tx.cpp: false on a corrupt ring.
	bool push_tx();
	// The entry whose slots go next: one already started, else an answer, else ours.
	TxEntry *next_tx();
	// Writes the next slot of `entry` (header and up to a slot of payload).
	void fill_slot(TxEntry &entry, uint8_t *slot);
	// The entry's last slot is in the ring.
	void finish_tx(TxEntry &entry);
	// A message send's last slot is in the ring: its completion (or only its count).
	void finish_msg_send(uint64_t flags, void *context, size_t total);
	// Copies `len` bytes of the iovecs, from byte `offset` of them on, into `dst`.
	static void gather(const iovec *iov, size_t count, size_t offset, uint8_t *dst,
			   size_t len);
	void cancel_all();
	// Messages came after before_sleep() asked for a doorbell: withdraws the request, and
	// drains the doorbell here when the peer took it (one read, instead of the engine's
	// epoll_wait finding the doorbell and a read, and another epoll_wait before the next
	// sleep to see it quiet).
	void take_back_doorbell();

	State state_ = State::idle;
	int sock_ = -1;           // AF_UNIX socket (connection management, then liveness)
	int own_bell_ = -1;       // our doorbell: the peer writes it
	int peer_bell_ = -1;      // the peer's doorbell: we write it
	bool in_engine_ = false;  // sock_, own_bell_ registered and we are a progress source
	// before_sleep() asked the peer for a doorbell for the receive ring and it was not
	// withdrawn since (take_back_doorbell).
	bool bell_asked_ = false;
	std::unique_ptr<Segment> segment_;
	std::unique_ptr<Segment> pending_segment_; // connecting: ours, not yet acknowledged
	RingProducer tx_ring_;
	RingConsumer rx_ring_;
	// Our sleeps call membarrier: decided and written into the segment at connect/accept
	// (declare_sleep_barrier), so that the peer may publish without a fence (shm_ring.h).
	bool sleeps_with_membarrier_ = false;
	util::Ring<TxEntry> tx_queue_;
	util::Ring<RxEntry> rx_queue_;
	util::Ring<TxEntry> responses_;      // answers we owe the peer (acks, read data)
	std::vector<Pending> pending_;       // tx_size entries, allocated once
	std::vector<uint32_t> free_pending_; // indices into pending_ (capacity reserved)
	bool rx_paused_ = false;             // a request waits in the ring for responses_ room
	Incoming incoming_;
	ShmAddress local_{};
	ShmAddress peer_{};
	bool have_peer_ = false;
	bool from_request_ = false; // opened from an FI_CONNREQ: waits for fi_accept
	ofi_rx_inplace_fn consume_ = nullptr; // set_consumer's
	void *consume_arg_ = nullptr;
};

} // namespace shm

#endif
