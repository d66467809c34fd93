// The shared segment's layout and the single-producer single-consumer rings in it.
//
// One ring per direction (ring 0: connector -> acceptor, ring 1: the other way), each a fixed
// number of fixed-size slots; a message longer than a slot's payload takes consecutive slots
// (the first carries the total length). Head and tail are free-running 64-bit counters, the
// producer owns head, the consumer tail; each side keeps its own copy and only publishes it,
// so what the peer writes into the segment is only ever *read* as a claim to be checked
// (head - tail within the ring size, slot headers in shm_endpoint_rx.cpp).
//
// A slot is ready when its header's `seq` holds its position in the ring's sequence plus
// one (slot n of the stream: n + 1), stored last (release) by the producer's publish. The
// consumer learns of messages from the slots themselves, not from head: a consumer that
// keeps polling an empty ring then reads only the line of the slot that comes next, and
// the producer's publish does not have to take the head's line back from it on every
// message (a busy consumer made every publish wait for that line: 40% of a sender's time
// in a stream of 8-byte messages, sampled with perf). Head is still published (the
// producer's own line, read by nobody on the way) for the free-slot count and diagnosis.
// A seq from another lap, or forged, only means "not ready": the peer stalls itself.
//
// Doorbells: each side has an eventfd in its progress engine that the other side writes,
// but only when asked to: a consumer that found its ring empty sets consumer_sleeping, a
// producer that found it full sets producer_waiting. The other side clears the flag with an
// exchange and writes the eventfd once. Two pairs, each a Dekker pattern: the busy side
// stores an index (publish: a slot's seq; publish_tail: tail) and then loads the flag; the
// side going to sleep stores the flag and then loads the index. A barrier between the store
// and the load on both sides means that either the flag is seen or the index is.
//
// The busy side's barrier is the expensive one: it runs per message (publish) or per pass
// (publish_tail), and a full fence waits for the store buffer to drain, i.e. for the line of
// the slot that a spinning consumer keeps reading (perf: most of a sender's time in a stream
// of small messages). So the cost moves to the side that goes to sleep, with membarrier(2):
// after storing its flag, the sleeper calls MEMBARRIER_CMD_GLOBAL_EXPEDITED, which makes
// every running thread of every registered process execute a full barrier at some point B
// during the call (a thread not running is switched out, which is one), then it loads the
// index. The busy side keeps only a compiler barrier between its store and its load (program
// order is all the hardware gets). Why that is enough: the busy thread's B falls either
// before its index store, so its flag load comes after B and thus after the sleeper's flag
// store (the sleeper stored before calling): the flag is seen; or after the index store, so
// the store is visible to all when the call returns and the sleeper's index load sees it.
// Either way no doorbell is lost. This needs (a) the busy side's process registered
// (MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, shm_membarrier.cpp, at setup; otherwise the call
// skips its threads) and (b) the busy side to know that the peer's sleeps call membarrier:
// each side writes that in its own word of the segment (sleeps_with_membarrier) before it
// hands the segment over (connector) or accepts (acceptor), and reads the peer's word once
// when connected. A pair uses membarrier only when both declared it (each is then
// registered); otherwise both sides of both rings fence as before. A peer that declares it
// and does not call membarrier only loses its own doorbells (it may sleep over our message
// or our freed slots; we never wait for it), and one that declares nothing but skips its
// fences only delays its own messages and slots to us. When the call is unavailable (ENOSYS, seccomp,
// an old kernel) or the registration fails, a process declares nothing and fences; a
// membarrier that fails later makes the sleeper not sleep (it polls again) rather than trust
// a barrier that did not happen. The price is a system call per arm() (plus an
// inter-processor interrupt to each core running a registered process): paid only on the
// way to sleep, where an eventfd wait follows anyway.
#ifndef PROV_SHM_SHM_RING_H
#define PROV_SHM_SHM_RING_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "prov/shm/shm_membarrier.h"

namespace shm {

inline constexpr uint32_t kSlots = 64;
inline constexpr size_t kSlotSize = 4096;

// Written by the producer into each slot, before the payload (one cache line).
struct SlotHeader {
	uint32_t op;       // kOp*
	uint32_t flags;    // kSlotFirst, kSlotCqData
	uint32_t len;      // payload bytes in this slot (<= kSlotPayload)
	uint32_t status;   // kOpAck, kOpReadResp: the target's verdict (positive FI_E*), else 0
	uint64_t total;    // first slot: bytes the operation carries (read request: bytes
			   // asked for); later slots: bytes still to come
	uint64_t cq_data;  // first slot with kSlotCqData
	uint64_t id;       // RMA: the initiator's operation, echoed by the target's answer
	uint64_t rma_key;  // kOpWrite, kOpReadReq (first slot): the target region's key
	uint64_t rma_addr; // ... and the address (or offset) in it
	uint64_t seq;      // the slot's position in the ring's sequence + 1: ready (see above);
			   // written only by RingProducer::publish, never with the fields above
};
static_assert(sizeof(SlotHeader) == 64, "a slot header is one cache line");
inline constexpr size_t kSlotPayload = kSlotSize - sizeof(SlotHeader);
// The header's fields before seq: what a producer writes with one copy (the consumer may be
// reading seq meanwhile, atomically).
inline constexpr size_t kSlotFieldsSize = offsetof(SlotHeader, seq);
static_assert(kSlotFieldsSize % alignof(uint64_t) == 0, "seq is an aligned 64-bit word");

// The seq word of a slot, accessed atomically by both sides.
inline std::atomic_ref<uint64_t> slot_seq(uint8_t *slot)
{
	return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t *>(slot + kSlotFieldsSize));
}
inline uint64_t ready_seq(const uint8_t *slot)
{
	return slot_seq(const_cast<uint8_t *>(slot)).load(std::memory_order_acquire);
}
// Writes a header's fields (all but seq) into a slot.
inline void write_slot_fields(uint8_t *slot, const SlotHeader &h)
{
	memcpy(slot, &h, kSlotFieldsSize);
}

// An operation takes one slot (requests, answers, short messages) or consecutive slots;
// slots of two operations never interleave in a ring.
inline constexpr uint32_t kOpMsg = 1;      // a message: completes a posted receive
inline constexpr uint32_t kOpWrite = 2;    // RMA write: payload for the target's region
inline constexpr uint32_t kOpReadReq = 3;  // RMA read request: no payload
inline constexpr uint32_t kOpReadResp = 4; // the data of a read (or its refusal)
inline constexpr uint32_t kOpAck = 5;      // the target's verdict on a write, no payload
inline constexpr uint32_t kSlotFirst = 1u << 0;
inline constexpr uint32_t kSlotCqData = 1u << 1;
inline constexpr uint32_t kSlotKnownFlags = kSlotFirst | kSlotCqData;

struct RingControl {
	alignas(64) std::atomic<uint64_t> head;
	alignas(64) std::atomic<uint64_t> tail;
	alignas(64) std::atomic<uint32_t> consumer_sleeping;
	std::atomic<uint32_t> producer_waiting;
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "rings need address-free atomics");

struct Ring {
	RingControl control;
	alignas(64) uint8_t slots[kSlots][kSlotSize];
};

inline constexpr uint64_t kSegmentMagic = 0x316d68735f6966ull; // "fi_shm1"
// 2: 64-byte slot headers, RMA; 3: seq; 4: sleeps_with_membarrier
inline constexpr uint32_t kSegmentVersion = 4;

struct SegmentLayout {
	uint64_t magic;
	uint32_t version;
	uint32_t slot_count;
	// Nonzero: this side's sleeps call membarrier (see above), so the peer may publish
	// without a fence. Index 0 is the connector's word, 1 the acceptor's; each written by
	// its side only, before the handshake message that hands it over.
	std::atomic<uint32_t> sleeps_with_membarrier[2];
	alignas(64) Ring rings[2];
};

// The barriers of one side of a ring (see above). `membarrier`: both sides declared it, so
// the busy side's barrier is a compiler barrier and the sleeper's a membarrier; otherwise
// both are fences.
struct RingBarriers {
	bool membarrier = false;
};
// Between the busy side's index store and its load of the peer's flag.
inline void busy_barrier(const RingBarriers &b)
{
	if (b.membarrier)
		std::atomic_signal_fence(std::memory_order_seq_cst);
	else
		std::atomic_thread_fence(std::memory_order_seq_cst);
}
// Between the sleeper's flag store and its load of the index; false when the membarrier
// failed (the caller must not sleep).
inline bool sleep_barrier(const RingBarriers &b)
{
	if (b.membarrier)
		return membarrier_all();
	std::atomic_thread_fence(std::memory_order_seq_cst);
	return true;
}

// The producing side of one ring.
class RingProducer {
public:
	void attach(Ring *ring, RingBarriers barriers = {})
	{
		ring_ = ring;
		head_ = 0;
		seen_tail_ = 0;
		barriers_ = barriers;
	}
	const RingBarriers &barriers() const { return barriers_; }
	// Slots free for writing; false when the peer's tail is impossible (corrupt).
	bool free_slots(uint32_t *count) const
	{
		uint64_t tail = ring_->control.tail.load(std::memory_order_acquire);
		uint64_t used = head_ - tail;
		if (tail > head_ || used > kSlots)
			return false;
		*count = static_cast<uint32_t>(kSlots - used);
		return true;
	}
	// Whether the next `count` (<= kSlots) slots are free, reading the consumer's tail only
	// when the last tail seen says they are not: that line is written by the peer, so a
	// read of it after each release costs a cache miss; the ring has kSlots slots to write
	// before it is needed again. False also for an impossible tail (the general path
	// reports it).
	bool has_free_slots(uint32_t count)
	{
		if (head_ - seen_tail_ + count <= kSlots)
			return true;
		uint64_t tail = ring_->control.tail.load(std::memory_order_acquire);
		if (tail > head_ || head_ - tail > kSlots)
			return false;
		seen_tail_ = tail;
		return head_ - tail + count <= kSlots;
	}
	uint8_t *slot(uint32_t ahead) { return ring_->slots[(head_ + ahead) % kSlots]; }
	// Makes `count` written slots visible (their seq last, each after its fields and
	// payload; the first slot's last, so that a consumer that sees it ready finds the
	// whole message: caught half-way, it would take the message slot by slot instead of
	// in place); true when the consumer asked for a doorbell.
	bool publish(uint32_t count)
	{
		for (uint32_t i = count; i-- > 0;)
			slot_seq(slot(i)).store(head_ + i + 1, std::memory_order_release);
		head_ += count;
		ring_->control.head.store(head_, std::memory_order_release);
		busy_barrier(barriers_);
		return ring_->control.consumer_sleeping.load(std::memory_order_relaxed) &&
		       ring_->control.consumer_sleeping.exchange(0);
	}
	// The ring was full: ask the consumer to ring us when it frees a slot, then look again
	// (false: still full, the doorbell will come; true also when the barrier failed).
	bool wait_for_space()
	{
		ring_->control.producer_waiting.store(1);
		if (!sleep_barrier(barriers_))
			return true;
		uint32_t n = 0;
		return !free_slots(&n) || n > 0;
	}

private:
	Ring *ring_ = nullptr;
	uint64_t head_ = 0;
	uint64_t seen_tail_ = 0; // a tail read earlier (and checked): slots before it are free
	RingBarriers barriers_;
};

// The consuming side of one ring.
class RingConsumer {
public:
	void attach(Ring *ring, RingBarriers barriers = {})
	{
		ring_ = ring;
		tail_ = 0;
		published_tail_ = 0;
		barriers_ = barriers;
	}
	const RingBarriers &barriers() const { return barriers_; }
	// Whether the next slot is ready (its seq says so): one read of its line.
	bool has_ready() const { return ready_seq(slot()) == tail_ + 1; }
	// The consecutive slots ready to read from the next one on (each seq read in turn, up
	// to the first not ready). Always true: a forged seq only hides a slot (the bool is
	// kept for the callers' corruption paths).
	bool ready_slots(uint32_t *count) const
	{
		uint32_t n = 0;
		while (n < kSlots && ready_seq(slot_ahead(n)) == tail_ + n + 1)
			n++;
		*count = n;
		return true;
	}
	const uint8_t *slot() const { return ring_->slots[tail_ % kSlots]; }
	// The slot `ahead` places after slot() (the caller knows it is ready).
	const uint8_t *slot_ahead(uint32_t ahead) const
	{
		return ring_->slots[(tail_ + ahead) % kSlots];
	}
	// Done with the `count` slots just read: the next one is read next; the producer may
	// reuse them once publish_tail() ran.
	void consume(uint32_t count = 1) { tail_ += count; }
	// Frees the slots consumed since the last call (one store and fence for a pass over
	// many: a stream's receiver frees them per pass, not per message); true when the
	// producer asked for a doorbell.
	bool publish_tail()
	{
		if (tail_ == published_tail_)
			return false;
		published_tail_ = tail_;
		ring_->control.tail.store(tail_, std::memory_order_release);
		busy_barrier(barriers_);
		return ring_->control.producer_waiting.load(std::memory_order_relaxed) &&
		       ring_->control.producer_waiting.exchange(0);
	}
	// Found empty: ask for a doorbell, then look again (true: something arrived meanwhile,
	// or the barrier failed: the caller finds no slot ready then and must not sleep).
	bool arm()
	{
		ring_->control.consumer_sleeping.store(1);
		if (!sleep_barrier(barriers_))
			return true;
		uint32_t n = 0;
		return !ready_slots(&n) || n > 0;
	}
	// Withdraws the request of arm(): true when the producer took it (it rings, or has
	// rung, the doorbell), false when it was still ours (no doorbell comes for it).
	bool disarm() { return ring_->control.consumer_sleeping.exchange(0) == 0; }

private:
	Ring *ring_ = nullptr;
	uint64_t tail_ = 0;
	uint64_t published_tail_ = 0; // what the producer sees
	RingBarriers barriers_;
};

} // namespace shm

#endif
