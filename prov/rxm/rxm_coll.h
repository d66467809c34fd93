// Collectives on ofi_rxm (fi_collective(3)): util::coll::Group runs the algorithms; rxm
// carries their messages and owns the groups an endpoint joined.
//
// A group message is a WireOp::collective over the peer's connection (an internal eager
// message, copied into a bounce buffer): tag = the group's wire id, msg_id = the collective's
// sequence number, offset = its step. The receiver finds the group by wire id and the
// sender's rank by the connection's AV entry: a member cannot pose as another one, whatever
// its message says. Payloads larger than the eager size travel in chunks (Group splits them).
//
// Members agree on a group's wire id without talking: a hash of the member addresses in set
// order, mixed with how many groups of these members this endpoint joined before (the n-th
// join of the same set on every member gets the same id). Messages for a group not joined
// yet here are held, a bounded number per peer (a peer over the bound broke the protocol: its
// connection fails), and handed to the group when the join comes.
//
// fi_join_collective runs a barrier over the new group before it reports FI_JOIN_COMPLETE on
// the endpoint's EQ, as 1.17 does: when the event arrives, every member has joined.
#ifndef OFI_PROV_RXM_COLL_H
#define OFI_PROV_RXM_COLL_H

#include "prov/util/collective.h"
#include "prov/util/fid_object.h"

#include <rdma/fi_collective.h>
#include <rdma/fi_domain.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <unordered_map>
#include <vector>

namespace rxm {

class RxmEndpoint;
class CollGroup;

// Payload bound of one collective, in eager-sized chunks. A member that runs ahead (a root
// broadcasting before its children issued theirs) parks its chunks at the others as early
// messages, which Group bounds (kMaxEarly): a quarter of that leaves room for several
// collectives in flight.
constexpr size_t kCollMaxChunks = util::coll::Group::kMaxEarly / 4;
// Messages and bytes a peer may park for groups not joined here yet. A joining peer sends
// at most log2(members) barrier messages before every member joined.
constexpr size_t kCollMaxOrphansPerPeer = 64;
constexpr size_t kCollMaxOrphanBytesPerPeer = 64 * 1024;

// The fid_mc fi_join_collective returns: fi_mc_addr is the handle collectives take as
// coll_addr. Holds a reference on its endpoint; closing it leaves the group.
class RxmMc : public util::FidStorage<fid_mc>, public util::FidObject {
public:
	RxmMc(RxmEndpoint &ep, fi_addr_t handle, void *context);
	~RxmMc() override;
	struct fid_mc *mc_fid() noexcept { return &embedded_fid.pub; }
	fi_addr_t handle() const noexcept { return embedded_fid.pub.fi_addr; }
	int close() override;

private:
	RxmEndpoint &ep_;
};

// One group this endpoint joined.
class CollGroup : public util::coll::Transport {
public:
	CollGroup(RxmEndpoint &ep, std::vector<fi_addr_t> members, size_t rank, uint64_t wire_id,
		  size_t max_message);
	int send(size_t rank, uint64_t seq, uint32_t step,
		 std::span<const uint8_t> payload) override;
	// The rank of AV entry 'addr' in this group, or size() when it is no member.
	size_t rank_of(fi_addr_t addr) const noexcept;

	RxmEndpoint &ep;
	const std::vector<fi_addr_t> members;
	const uint64_t wire_id;
	util::coll::Group group;
	RxmMc *mc = nullptr;
	bool join_pending = true;  // the first completion is the join's barrier
	// Flags of the issued collectives (selective completion), in issue order like their
	// completions.
	std::deque<uint64_t> op_flags;
	// A collective is reported only once its own messages left (the core completed their
	// sends): a member that sees its collective done may close its endpoint, and messages
	// still queued would then never reach the others. Sends not yet completed, by sequence
	// number; collectives the group finished, waiting for theirs (sequence, result).
	std::unordered_map<uint64_t, uint32_t> unsent;
	std::deque<std::pair<uint64_t, util::coll::Done>> finished;
	uint64_t next_finished_seq = 0; // the group completes collectives in sequence order
	// Set while the group is inside send(); a loss noticed then is reported by send().
	bool in_send = false;
	bool lost_in_send = false;
};

// Everything collective an endpoint holds.
struct CollState {
	std::unordered_map<uint64_t, std::unique_ptr<CollGroup>> by_wire_id;
	std::unordered_map<fi_addr_t, CollGroup *> by_handle;
	std::unordered_map<uint64_t, uint64_t> joins_of_set;  // member hash -> joins so far
	uint64_t next_handle = 0;
	struct Orphan {
		fi_addr_t from;
		uint64_t wire_id;
		uint64_t seq;
		uint32_t step;
		std::vector<uint8_t> payload;
	};
	std::deque<Orphan> orphans;
	struct Parked {
		size_t count = 0;
		size_t bytes = 0;
	};
	std::unordered_map<fi_addr_t, Parked> parked;  // by sender
};

// Elements of elem bytes one collective may carry (fi_query_collective's datatype_attr.count).
size_t coll_max_count(size_t elem);
// Reduces with rxm's atomic engine (the operations and datatypes fi_atomic offers).
int coll_reduce(int op, int datatype, void *inout, const void *in, size_t count);
// Whether allreduce supports (op, datatype): the reductions of fi_collective(3) that rxm's
// atomics run.
bool coll_reduce_supported(unsigned op, unsigned datatype);

} // namespace rxm

#endif
