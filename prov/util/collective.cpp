#include "prov/util/collective.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <bit>
#include <cstring>

namespace util::coll {

namespace {

uint32_t level(size_t mask) noexcept { return static_cast<uint32_t>(std::countr_zero(mask)); }

// Smallest power of two >= n (the root's subtree bound).
size_t ceil_pow2(size_t n) noexcept { return std::bit_ceil(n); }

// Lowest set bit of a non-root relative rank: its subtree spans [vr, vr + lowbit).
size_t lowbit(size_t vr) noexcept { return vr & (~vr + 1); }

} // namespace

Group::Group(size_t size, size_t my_rank, Transport &transport, ReduceFn reduce,
	     size_t max_message)
    : size_(size), rank_(my_rank), transport_(transport), reduce_(reduce),
      max_message_(max_message)
{
}

int Group::split_into_chunks(Op &op) const
{
	// Every member computes the same chunk size from the same arguments, so the pieces
	// one sends are the pieces the other expects.
	const size_t chunk = max_message_ / op.elem_size * op.elem_size;
	if (!chunk)
		return -FI_EMSGSIZE;
	auto pieces = [chunk](size_t len) { return len ? (len - 1) / chunk + 1 : 1; };
	for (Round &round : op.rounds) {
		std::vector<Send> sends;
		for (const Send &s : round.sends) {
			size_t n = pieces(s.len);
			if (n > kMaxChunks)
				return -FI_EMSGSIZE;
			for (size_t i = 0; i < n; ++i)
				sends.push_back({s.peer, s.step | static_cast<uint32_t>(i << kChunkShift),
						 s.offset + i * chunk,
						 std::min(chunk, s.len - std::min(s.len, i * chunk))});
		}
		std::vector<Recv> recvs;
		for (const Recv &r : round.recvs) {
			size_t n = pieces(r.len);
			if (n > kMaxChunks)
				return -FI_EMSGSIZE;
			for (size_t i = 0; i < n; ++i)
				recvs.push_back({r.peer, r.step | static_cast<uint32_t>(i << kChunkShift),
						 r.offset + i * chunk,
						 std::min(chunk, r.len - std::min(r.len, i * chunk)),
						 r.action});
		}
		round.sends = std::move(sends);
		round.recvs = std::move(recvs);
	}
	return 0;
}

size_t Group::absolute(size_t relative, size_t root) const noexcept
{
	return (relative + root) % size_;
}

size_t Group::relative(size_t rank, size_t root) const noexcept
{
	return (rank + size_ - root) % size_;
}

// Binomial tree from 'root' over op.work[0, len): receive from the parent, then send to the
// children, larger subtrees first.
void Group::add_tree_bcast(Op &op, size_t root, size_t len, uint32_t phase)
{
	size_t vr = relative(rank_, root);
	size_t span = vr ? lowbit(vr) : ceil_pow2(size_);
	if (vr)
		op.rounds.push_back({{}, {{absolute(vr - span, root), phase + level(span), 0, len,
					   Action::copy}}});
	Round sends;
	for (size_t m = span >> 1; m; m >>= 1)
		if (vr + m < size_)
			sends.sends.push_back({absolute(vr + m, root), phase + level(m), 0, len});
	if (!sends.sends.empty())
		op.rounds.push_back(std::move(sends));
}

// Binomial tree toward rank 0: reduce every child's partial result into op.work, then send
// ours to the parent.
void Group::add_tree_reduce(Op &op, size_t bytes)
{
	size_t span = rank_ ? lowbit(rank_) : ceil_pow2(size_);
	Round children;
	for (size_t m = 1; m < span; m <<= 1)
		if (rank_ + m < size_)
			children.recvs.push_back({rank_ + m, level(m), 0, bytes, Action::reduce});
	if (!children.recvs.empty())
		op.rounds.push_back(std::move(children));
	if (rank_)
		op.rounds.push_back({{{rank_ - span, level(span), 0, bytes}}, {}});
}

// Binomial tree toward rank 0 over op.work holding one block per rank in rank order: each
// rank collects its subtree's blocks, then sends them up.
void Group::add_tree_gather(Op &op, size_t block)
{
	size_t span = rank_ ? lowbit(rank_) : ceil_pow2(size_);
	Round children;
	for (size_t m = 1; m < span; m <<= 1) {
		size_t child = rank_ + m;
		if (child < size_)
			children.recvs.push_back({child, level(m), child * block,
						  (std::min(child + m, size_) - child) * block,
						  Action::copy});
	}
	if (!children.recvs.empty())
		op.rounds.push_back(std::move(children));
	if (rank_)
		op.rounds.push_back({{{rank_ - span, level(span), rank_ * block,
				       (std::min(rank_ + span, size_) - rank_) * block}},
				     {}});
}

// Binomial tree from 'root' over op.work holding the blocks of our subtree, ours first:
// receive them from the parent, then hand each child its subtree's share.
void Group::add_tree_scatter(Op &op, size_t root, size_t block)
{
	size_t vr = relative(rank_, root);
	size_t span = vr ? lowbit(vr) : ceil_pow2(size_);
	if (vr)
		op.rounds.push_back({{}, {{absolute(vr - span, root), level(span), 0,
					   (std::min(vr + span, size_) - vr) * block,
					   Action::copy}}});
	Round sends;
	for (size_t m = span >> 1; m; m >>= 1) {
		size_t child = vr + m;
		if (child < size_)
			sends.sends.push_back({absolute(child, root), level(m), m * block,
					       (std::min(child + m, size_) - child) * block});
	}
	if (!sends.sends.empty())
		op.rounds.push_back(std::move(sends));
}

int Group::barrier(void *context)
{
	Op op;
	op.context = context;
	for (size_t dist = 1; dist < size_; dist <<= 1)
		op.rounds.push_back({{{(rank_ + dist) % size_, level(dist), 0, 0}},
				     {{(rank_ + size_ - dist) % size_, level(dist), 0, 0,
				       Action::none}}});
	return issue(std::move(op));
}

int Group::broadcast(void *buf, size_t bytes, size_t root, void *context)
{
	if (root >= size_ || (bytes && !buf))
		return -FI_EINVAL;
	Op op;
	op.context = context;
	op.work = static_cast<uint8_t *>(buf);
	add_tree_bcast(op, root, bytes, 0);
	return issue(std::move(op));
}

int Group::allreduce(const void *src, void *dst, size_t count, size_t elem_size, int datatype,
		     int reduce_op, void *context)
{
	if (!elem_size || count > SIZE_MAX / elem_size || (count && (!src || !dst)))
		return -FI_EINVAL;
	size_t bytes = count * elem_size;
	Op op;
	op.context = context;
	op.work = static_cast<uint8_t *>(dst);
	if (bytes)
		std::memmove(dst, src, bytes);
	op.datatype = datatype;
	op.reduce_op = reduce_op;
	op.elem_size = elem_size;
	add_tree_reduce(op, bytes);
	add_tree_bcast(op, 0, bytes, kSecondPhase);
	return issue(std::move(op));
}

int Group::allgather(const void *src, void *dst, size_t bytes, void *context)
{
	if (bytes > SIZE_MAX / size_ || (bytes && (!src || !dst)))
		return -FI_EINVAL;
	Op op;
	op.context = context;
	op.work = static_cast<uint8_t *>(dst);
	if (bytes)
		std::memmove(op.work + rank_ * bytes, src, bytes);
	add_tree_gather(op, bytes);
	add_tree_bcast(op, 0, size_ * bytes, kSecondPhase);
	return issue(std::move(op));
}

int Group::scatter(const void *src, void *dst, size_t bytes, size_t root, void *context)
{
	if (root >= size_ || bytes > SIZE_MAX / size_ || (bytes && !dst) ||
	    (bytes && rank_ == root && !src))
		return -FI_EINVAL;
	Op op;
	op.context = context;
	size_t vr = relative(rank_, root);
	size_t blocks = vr ? std::min(vr + lowbit(vr), size_) - vr : size_;
	op.owned.resize(blocks * bytes);
	op.work = op.owned.data();
	// The root lays the blocks out by relative rank, so every subtree's share is contiguous.
	if (!vr && bytes)
		for (size_t i = 0; i < size_; ++i)
			std::memcpy(op.work + i * bytes,
				    static_cast<const uint8_t *>(src) + absolute(i, root) * bytes,
				    bytes);
	op.result = static_cast<uint8_t *>(dst);
	op.result_len = bytes;
	op.finish = [](Op &o) {
		if (o.result_len)
			std::memcpy(o.result, o.work, o.result_len);
	};
	add_tree_scatter(op, root, bytes);
	return issue(std::move(op));
}

int Group::issue(Op &&op)
{
	// Unsplit, every message fits: no need to copy the rounds.
	if (max_message_ != SIZE_MAX) {
		int ret = split_into_chunks(op);
		if (ret)
			return ret;
	}
	op.seq = next_seq_++;
	if (failed_) {
		done_.push_back({op.context, -FI_EIO});
		return 0;
	}
	ops_.push_back(std::move(op));
	if (ops_.size() == 1)
		advance();
	return 0;
}

bool Group::round_complete(const Round &round) const
{
	return std::all_of(round.recvs.begin(), round.recvs.end(),
			   [](const Recv &r) { return r.arrived; });
}

Group::Recv *Group::find_recv(Op &op, size_t from, uint32_t step, bool *later)
{
	*later = false;
	for (size_t i = op.round; i < op.rounds.size(); ++i)
		for (Recv &r : op.rounds[i].recvs)
			if (r.peer == from && r.step == step && !r.arrived) {
				if (i == op.round)
					return &r;
				*later = true;
				return nullptr;
			}
	return nullptr;
}

bool Group::apply(Op &op, Recv &recv, std::span<const uint8_t> payload)
{
	if (payload.size() != recv.len)
		return false;
	if (recv.action == Action::copy && recv.len)
		std::memmove(op.work + recv.offset, payload.data(), recv.len);
	else if (recv.action == Action::reduce && recv.len &&
		 reduce_(op.reduce_op, op.datatype, op.work + recv.offset, payload.data(),
			 recv.len / op.elem_size))
		return false;
	recv.arrived = true;
	return true;
}

void Group::hold(size_t from, uint64_t seq, uint32_t step, std::span<const uint8_t> payload)
{
	if (early_.size() >= kMaxEarly || payload.size() > kMaxEarlyBytes - early_bytes_) {
		fail_all();
		return;
	}
	early_.push_back({from, seq, step, {payload.begin(), payload.end()}});
	early_bytes_ += payload.size();
}

void Group::deliver(size_t from, uint64_t seq, uint32_t step, std::span<const uint8_t> payload)
{
	if (failed_)
		return;
	if (from >= size_ || from == rank_) {
		fail_all();
		return;
	}
	// Collectives we have not issued yet, or not reached: keep for later.
	if (ops_.empty() || seq > ops_.front().seq) {
		if (seq < next_seq_ && (ops_.empty() || seq < ops_.front().seq))
			fail_all();  // a collective that is over
		else
			hold(from, seq, step, payload);
		return;
	}
	if (seq < ops_.front().seq) {
		fail_all();
		return;
	}
	Op &op = ops_.front();
	bool later = false;
	Recv *recv = find_recv(op, from, step, &later);
	if (later) {
		hold(from, seq, step, payload);
		return;
	}
	if (!recv || !apply(op, *recv, payload)) {
		fail_all();
		return;
	}
	advance();
}

void Group::advance()
{
	while (!failed_ && !ops_.empty()) {
		Op &op = ops_.front();
		if (op.round < op.rounds.size()) {
			Round &round = op.rounds[op.round];
			while (op.next_send < round.sends.size()) {
				const Send &s = round.sends[op.next_send];
				int ret = transport_.send(s.peer, op.seq, s.step,
							  {op.work + s.offset, s.len});
				if (ret == -FI_EAGAIN)
					return;  // progress() retries
				if (ret) {
					fail_all();
					return;
				}
				++op.next_send;
			}
			// Messages that came early for this round.
			for (auto it = early_.begin(); it != early_.end();) {
				bool later = false;
				Recv *recv = it->seq == op.seq ?
					find_recv(op, it->from, it->step, &later) : nullptr;
				if (!recv) {
					++it;
					continue;
				}
				if (!apply(op, *recv, it->payload)) {
					fail_all();
					return;
				}
				early_bytes_ -= it->payload.size();
				it = early_.erase(it);
			}
			if (!round_complete(round))
				return;
			++op.round;
			op.next_send = 0;
			continue;
		}
		if (op.finish)
			op.finish(op);
		done_.push_back({op.context, 0});
		uint64_t seq = op.seq;
		ops_.pop_front();
		// A held message of a collective that is now over matched none of its receives.
		if (std::any_of(early_.begin(), early_.end(),
				[seq](const Early &e) { return e.seq <= seq; }))
			fail_all();
	}
}

bool Group::waiting_on(size_t rank) const
{
	for (const Op &op : ops_)
		for (size_t i = op.round; i < op.rounds.size(); ++i)
			for (const Recv &r : op.rounds[i].recvs) {
				if (r.peer != rank || r.arrived)
					continue;
				bool held = std::any_of(early_.begin(), early_.end(), [&](const Early &e) {
					return e.from == rank && e.seq == op.seq && e.step == r.step;
				});
				if (!held)
					return true;
			}
	return false;
}

void Group::progress()
{
	if (!ops_.empty())
		advance();
}

void Group::fail_all(int status)
{
	failed_ = true;
	for (const Op &op : ops_)
		done_.push_back({op.context, status});
	ops_.clear();
	early_.clear();
	early_bytes_ = 0;
}

bool Group::pop_done(Done *done)
{
	if (done_.empty())
		return false;
	*done = done_.front();
	done_.pop_front();
	return true;
}

} // namespace util::coll
