// util::coll::Group: the algorithms of fi_collective(3) over any point-to-point transport.
//
// A provider joins a group (the members of an AvSet, in set order, and its own rank among
// them) and gives the Group a Transport that sends one message to a member. The Group turns
// each collective into rounds of such messages and is fed what arrives (deliver); it never
// blocks and never calls back into the provider except through Transport::send.
//
// Algorithms scale with log2(members), none sends everything to one rank:
//   barrier    dissemination: round k sends to rank+2^k and hears from rank-2^k
//   broadcast  binomial tree from the root
//   allreduce  binomial-tree reduce to rank 0, then broadcast of the result (every rank gets
//              the same bits, whatever order partial results arrived in)
//   allgather  binomial-tree gather to rank 0, then broadcast of the whole vector
//   scatter    binomial tree from the root, each node forwarding its children's blocks
// Collectives of one group run one after another in the order they were issued, which
// fi_collective(3) requires to be the same on every member; each message names the
// collective (seq) and the round (step) it belongs to.
//
// Payloads larger than the transport's largest message (max_message) travel in chunks: each
// send or receive of a round is split into pieces of at most max_message bytes (whole
// elements for allreduce), told apart by the step's chunk bits (step | chunk << 8).
//
// Members are peers: what they send is checked like bytes from a socket. A message for a
// round that is over, for a round that expects nothing from that member, with the wrong
// length, or more early messages than kMaxEarly / kMaxEarlyBytes fails the group: the
// running and queued collectives complete with -FI_EIO, and so does every later one.
#ifndef OFI_PROV_UTIL_COLLECTIVE_H
#define OFI_PROV_UTIL_COLLECTIVE_H

#include <cstddef>
#include <cstdint>
#include <rdma/fi_errno.h>
#include <deque>
#include <span>
#include <vector>

namespace util::coll {

class Transport {
public:
	virtual ~Transport() = default;
	// Sends payload to member 'rank', tagged (seq, step). Must copy payload before it
	// returns. Returns 0, -FI_EAGAIN (the Group retries on its next progress()), or another
	// -FI_E* code (the group fails).
	virtual int send(size_t rank, uint64_t seq, uint32_t step,
			 std::span<const uint8_t> payload) = 0;
};

// Reduces count elements of 'in' into 'inout' with fi_op 'op' on fi_datatype 'datatype';
// returns 0 or a negative code.
using ReduceFn = int (*)(int op, int datatype, void *inout, const void *in, size_t count);

struct Done {
	void *context;
	int status;  // 0 or a negative -FI_E* code
};

class Group {
public:
	static constexpr size_t kMaxEarly = 256;                 // messages held for later
	static constexpr size_t kMaxEarlyBytes = 16u << 20;      // and their bytes

	// Chunks per message are numbered in the step's upper 24 bits.
	static constexpr size_t kMaxChunks = size_t(1) << 24;

	// max_message: the largest payload the transport sends in one message (all members of
	// a group must use the same value, or the chunks they expect differ).
	Group(size_t size, size_t my_rank, Transport &transport, ReduceFn reduce,
	      size_t max_message = SIZE_MAX);

	size_t size() const noexcept { return size_; }
	size_t rank() const noexcept { return rank_; }
	bool failed() const noexcept { return failed_; }

	// Issue a collective; it completes through pop_done. Buffers stay the caller's until
	// then. Bad arguments (root out of range, count overflow) give -FI_EINVAL and no
	// completion; so does a payload that needs more than kMaxChunks chunks or an element
	// larger than max_message (-FI_EMSGSIZE). 'bytes' / 'count' are per member.
	int barrier(void *context);
	int broadcast(void *buf, size_t bytes, size_t root, void *context);
	int allreduce(const void *src, void *dst, size_t count, size_t elem_size, int datatype,
		      int op, void *context);
	int allgather(const void *src, void *dst, size_t bytes, void *context);
	int scatter(const void *src, void *dst, size_t bytes, size_t root, void *context);

	// A message from member 'from' (the transport vouches for who sent it).
	void deliver(size_t from, uint64_t seq, uint32_t step, std::span<const uint8_t> payload);
	// Retries sends the transport refused with -FI_EAGAIN.
	void progress();
	// The next finished collective, in issue order.
	bool pop_done(Done *done);
	// Ends every running and queued collective with -FI_ECANCELED (the member leaves the
	// group); later ones complete with -FI_EIO at once.
	void cancel() { fail_all(-FI_ECANCELED); }
	// Whether a running or queued collective still expects a message from member 'rank'
	// that has not arrived (held early messages count as arrived).
	bool waiting_on(size_t rank) const;
	// Fails the group from outside (e.g. the transport lost a member): what runs and what
	// comes later completes with -FI_EIO.
	void fail() { fail_all(-FI_EIO); }

private:
	// Steps name a message within a collective the same way on both ends: the level of the
	// tree edge (bit index of its mask) or barrier round, plus kSecondPhase for the
	// broadcast that ends allreduce and allgather.
	static constexpr uint32_t kSecondPhase = 64;
	static constexpr unsigned kChunkShift = 8;  // steps below use the low 8 bits only
	struct Send {
		size_t peer;
		uint32_t step;
		size_t offset;  // into the op's working buffer
		size_t len;
	};
	enum class Action : uint8_t { copy, reduce, none };
	struct Recv {
		size_t peer;
		uint32_t step;
		size_t offset;
		size_t len;
		Action action;
		bool arrived = false;
	};
	struct Round {
		std::vector<Send> sends;
		std::vector<Recv> recvs;
	};
	struct Op {
		uint64_t seq = 0;
		void *context = nullptr;
		std::vector<Round> rounds;
		// The buffer the rounds address: the caller's (broadcast, allreduce's result) or
		// our own (scatter reorders blocks, allgather's result is the caller's).
		uint8_t *work = nullptr;
		std::vector<uint8_t> owned;
		// Runs when the last round is done (e.g. scatter copies the own block out).
		void (*finish)(Op &) = nullptr;
		uint8_t *result = nullptr;
		size_t result_len = 0;
		int datatype = 0, reduce_op = 0;
		size_t elem_size = 1;
		size_t round = 0;
		size_t next_send = 0;
	};
	struct Early {
		size_t from;
		uint64_t seq;
		uint32_t step;
		std::vector<uint8_t> payload;
	};

	int issue(Op &&op);
	// Splits the sends and receives of op's rounds into chunks of at most max_message_
	// bytes (whole elements of op.elem_size); -FI_EMSGSIZE when that cannot be done.
	int split_into_chunks(Op &op) const;
	// Runs the current op as far as it can go: sends, rounds without receives, held
	// messages for the round now current, the next op when one finishes.
	void advance();
	bool round_complete(const Round &round) const;
	// Where a message of the running op belongs: its receive in the current round
	// (returned), a later round (*later = true), or nowhere (nullptr, *later = false).
	Recv *find_recv(Op &op, size_t from, uint32_t step, bool *later);
	// Applies a message to its receive; false when its length is wrong.
	bool apply(Op &op, Recv &recv, std::span<const uint8_t> payload);
	void hold(size_t from, uint64_t seq, uint32_t step, std::span<const uint8_t> payload);
	void fail_all(int status = -FI_EIO);

	// Round builders (binomial trees over ranks relative to a root).
	size_t absolute(size_t relative, size_t root) const noexcept;
	size_t relative(size_t rank, size_t root) const noexcept;
	void add_tree_bcast(Op &op, size_t root, size_t len, uint32_t phase);
	void add_tree_reduce(Op &op, size_t bytes);
	void add_tree_gather(Op &op, size_t block);
	void add_tree_scatter(Op &op, size_t root, size_t block);

	const size_t size_;
	const size_t rank_;
	Transport &transport_;
	const ReduceFn reduce_;
	const size_t max_message_;
	uint64_t next_seq_ = 0;
	bool failed_ = false;
	std::deque<Op> ops_;  // front: running
	std::deque<Early> early_;
	size_t early_bytes_ = 0;
	std::deque<Done> done_;
};

} // namespace util::coll

#endif
