// Collectives on ofi_rxm: joining groups, issuing collectives, carrying their messages
// (see rxm_coll.h).
#include "prov/rxm/rxm_coll.h"

#include "prov/rxm/rxm_atomic_exec.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/util/av_set.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"

#include <rdma/fi_errno.h>

#include <cstring>

namespace rxm {

namespace {

// FNV-1a over each member's length and bytes: the same list gives the same value in every
// process, whatever fi_addr_t the members have there.
uint64_t hash_members(uint64_t h, std::string_view name)
{
	auto mix = [&h](uint8_t byte) {
		h ^= byte;
		h *= 0x100000001b3ULL;
	};
	mix(static_cast<uint8_t>(name.size()));
	for (char c : name)
		mix(static_cast<uint8_t>(c));
	return h;
}

// splitmix64's finaliser: spreads (members, n-th join) over the 64-bit id space.
uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

// Collective addresses rxm hands out (fi_mc_addr): bit 62 like the AV sets' (never an AV
// index) and bit 61 so they never equal a set's address.
constexpr fi_addr_t kGroupHandleBits = util::AvSet::kCollAddrBit | (1ULL << 61);

bool is_reduction(unsigned op)
{
	switch (op) {
	case FI_MIN: case FI_MAX: case FI_SUM: case FI_PROD: case FI_LOR: case FI_LAND:
	case FI_BOR: case FI_BAND: case FI_LXOR: case FI_BXOR:
		return true;
	default:
		return false;
	}
}

} // namespace

size_t coll_max_count(size_t elem)
{
	// Endpoints chunk by their eager size, at least buffer_size: at most kCollMaxChunks
	// messages per collective on every member.
	return kCollMaxChunks * (params().buffer_size / elem * elem) / elem;
}

int coll_reduce(int op, int datatype, void *inout, const void *in, size_t count)
{
	return atomic_apply(static_cast<uint8_t>(op), static_cast<uint8_t>(datatype), inout, in,
			    nullptr, nullptr, count);
}

bool coll_reduce_supported(unsigned op, unsigned datatype)
{
	return is_reduction(op) && datatype <= UINT8_MAX &&
	       atomic_supported(static_cast<uint8_t>(op), static_cast<uint8_t>(datatype),
				AtomicKind::write);
}

// ---- RxmMc ----

RxmMc::RxmMc(RxmEndpoint &ep, fi_addr_t handle, void *context)
    : FidObject(embedded_fid, FI_CLASS_MC, context), ep_(ep)
{
	embedded_fid.pub.fi_addr = handle;
	embedded_fid.pub.fid.ops = util::ops_ptr<RxmMc, util::make_fi_ops<RxmMc>>();
	ep_.ref();
}

RxmMc::~RxmMc() { ep_.unref(); }

int RxmMc::close()
{
	if (busy())
		return -FI_EBUSY;
	ep_.leave(this);
	return FidObject::close();
}

// ---- CollGroup ----

CollGroup::CollGroup(RxmEndpoint &endpoint, std::vector<fi_addr_t> member_list, size_t rank,
		     uint64_t id, size_t max_message)
    : ep(endpoint), members(std::move(member_list)), wire_id(id),
      group(members.size(), rank, *this, coll_reduce, max_message)
{
}

int CollGroup::send(size_t rank, uint64_t seq, uint32_t step, std::span<const uint8_t> payload)
{
	// Counted first: a send the core fails at once is finished (coll_sent) before we return.
	unsent[seq]++;
	in_send = true;
	int ret = ep.send_collective(members[rank], wire_id, seq, step, payload);
	in_send = false;
	if (ret) {
		if (--unsent[seq] == 0)
			unsent.erase(seq);
		return ret;
	}
	if (lost_in_send) {
		lost_in_send = false;
		return -FI_EIO; // the Group fails itself (it must not be failed from inside)
	}
	return 0;
}

size_t CollGroup::rank_of(fi_addr_t addr) const noexcept
{
	for (size_t i = 0; i < members.size(); ++i)
		if (members[i] == addr)
			return i;
	return members.size();
}

// ---- RxmEndpoint: transport ----

int RxmEndpoint::send_collective(fi_addr_t dest, uint64_t wire_id, uint64_t seq, uint32_t step,
				 std::span<const uint8_t> payload)
{
	int err = 0;
	RxmConn *conn = conn_for_send(dest, &err);
	if (!conn)
		return err ? err : -FI_EAGAIN;
	// Members must run with the same buffer size (FI_OFI_RXM_BUFFER_SIZE): a peer whose
	// buffers are smaller could not take our chunks.
	if (payload.size() > eager_limit_ ||
	    (conn->peer_eager_size && payload.size() > conn->peer_eager_size))
		return -FI_EMSGSIZE;
	// Charged to the peer like an application send: a member that does not drain cannot
	// take the pools from the others.
	TxOp *op = alloc_op(conn);
	TxBuffer *buf = op ? alloc_tx_buffer(conn) : nullptr;
	if (!buf) {
		if (op)
			free_op(op);
		return -FI_EAGAIN;
	}
	WireHeader h;
	h.op = WireOp::collective;
	h.tag = wire_id;
	h.msg_id = seq;
	h.offset = step;
	h.payload_len = static_cast<uint32_t>(payload.size());
	h.total_len = payload.size();
	encode_header(h, buf->data);
	if (!payload.empty())
		memcpy(buf->data + kWireHeaderSize, payload.data(), payload.size());
	buf->len = kWireHeaderSize + payload.size();
	buf->op = op;
	op->kind = TxKind::control; // no completion of its own: finish_op tells the group
	op->hdr.op = WireOp::collective;
	op->hdr.tag = wire_id;
	op->hdr.msg_id = seq;
	op->conn = conn;
	op->prepared = buf;
	queue_op(conn, op);
	return 0;
}

void RxmEndpoint::handle_collective(RxmConn *conn, const WireHeader &hdr,
				    std::span<const uint8_t> payload)
{
	// Who sent it is the connection's AV entry; a sender we cannot name is no member.
	fi_addr_t from = source_of(conn);
	if (from == FI_ADDR_NOTAVAIL) {
		RXM_WARN(FI_LOG_EP_DATA, "collective message from a peer outside the AV dropped\n");
		return;
	}
	if (!coll_)
		coll_ = std::make_unique<CollState>();
	auto it = coll_->by_wire_id.find(hdr.tag);
	if (it == coll_->by_wire_id.end()) {
		// A group not joined here yet: kept for the join, within the peer's allowance.
		CollState::Parked &parked = coll_->parked[from];
		if (parked.count >= kCollMaxOrphansPerPeer ||
		    payload.size() > kCollMaxOrphanBytesPerPeer - parked.bytes) {
			RXM_WARN(FI_LOG_EP_DATA, "peer sent too many messages for groups not "
						 "joined: closing its connection\n");
			fail_conn(conn, -FI_EIO);
			return;
		}
		parked.count++;
		parked.bytes += payload.size();
		coll_->orphans.push_back({from, hdr.tag, hdr.msg_id, static_cast<uint32_t>(hdr.offset),
					  {payload.begin(), payload.end()}});
		return;
	}
	CollGroup &g = *it->second;
	size_t rank = g.rank_of(from);
	if (rank == g.members.size()) {
		RXM_WARN(FI_LOG_EP_DATA, "collective message from a non-member: closing its "
					 "connection\n");
		fail_conn(conn, -FI_EIO);
		return;
	}
	g.group.deliver(rank, hdr.msg_id, static_cast<uint32_t>(hdr.offset), payload);
	reap_collectives(g);
}

void RxmEndpoint::coll_progress()
{
	if (!coll_)
		return;
	for (auto &[id, g] : coll_->by_wire_id) {
		g->group.progress();
		reap_collectives(*g);
	}
}

void RxmEndpoint::coll_member_lost(RxmConn *conn)
{
	if (!coll_ || coll_->by_wire_id.empty())
		return;
	fi_addr_t addr = source_of(conn);
	if (addr == FI_ADDR_NOTAVAIL)
		return;
	for (auto &[id, g] : coll_->by_wire_id) {
		size_t rank = g->rank_of(addr);
		// A member that finished its part may leave: only a group still waiting for its
		// messages fails (what it sent before closing was drained before we got here).
		if (rank == g->members.size() || rank == g->group.rank() || g->group.failed() ||
		    !g->group.waiting_on(rank))
			continue;
		RXM_WARN(FI_LOG_EP_DATA, "connection to a group member failed: the group fails\n");
		fail_group(*g);
	}
}

void RxmEndpoint::coll_sent(uint64_t wire_id, uint64_t seq, int err)
{
	if (!coll_)
		return;
	auto it = coll_->by_wire_id.find(wire_id);
	if (it == coll_->by_wire_id.end())
		return; // left since
	CollGroup &g = *it->second;
	auto unsent = g.unsent.find(seq);
	if (unsent != g.unsent.end() && --unsent->second == 0)
		g.unsent.erase(unsent);
	if (err && !g.group.failed()) {
		RXM_WARN(FI_LOG_EP_DATA, "a collective message was lost: the group fails\n");
		fail_group(g);
		return;
	}
	if (!g.in_send)
		reap_collectives(g);
}

void RxmEndpoint::fail_group(CollGroup &g)
{
	// Inside the group's own call to its transport, failing it would pull its state away
	// under it: the send reports the loss instead, and the group fails itself.
	if (g.in_send) {
		g.lost_in_send = true;
		return;
	}
	g.group.fail();
	reap_collectives(g);
}

void RxmEndpoint::reap_collectives(CollGroup &g)
{
	util::coll::Done done;
	while (g.group.pop_done(&done))
		g.finished.push_back({g.next_finished_seq++, done});
	while (!g.finished.empty()) {
		auto &[seq, result] = g.finished.front();
		if (!result.status && g.unsent.count(seq))
			return; // its messages are still on the way
		util::coll::Done d = result;
		g.finished.pop_front();
		report_collective(g, d);
	}
}

void RxmEndpoint::report_collective(CollGroup &g, const util::coll::Done &done)
{
	if (g.join_pending) {
		g.join_pending = false;
		if (!eq() || !g.mc)
			return; // unbound since the join, or leaving: nowhere to report
		if (done.status) {
			eq()->write_error(g.mc->fid(), g.mc->context(), 0, done.status, done.status,
					  nullptr, 0);
		} else {
			fi_eq_entry entry{g.mc->fid(), g.mc->context(), 0};
			eq()->write_event(FI_JOIN_COMPLETE, &entry, sizeof entry);
		}
		return;
	}
	uint64_t flags = g.op_flags.front();
	g.op_flags.pop_front();
	if (done.status)
		fail_tx(done.context, FI_COLLECTIVE, done.status, done.status);
	else
		complete_tx(flags, done.context, FI_COLLECTIVE);
}

// ---- RxmEndpoint: join and leave ----

int RxmEndpoint::join(const void *addr, uint64_t flags, struct fid_mc **mc, void *context)
{
	if (!addr || !mc)
		return -FI_EINVAL;
	// rxm offers no multicast: a join is a collective join or nothing.
	if (!(flags & FI_COLLECTIVE))
		return -FI_ENOSYS;
	if (flags & ~FI_COLLECTIVE)
		return -FI_EBADFLAGS;
	if (!(info_->caps & FI_COLLECTIVE))
		return -FI_EOPNOTSUPP;
	const auto *where = static_cast<const fi_collective_addr *>(addr);
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_EOPBADSTATE;
	if (!eq())
		return -FI_ENOEQ; // FI_JOIN_COMPLETE needs somewhere to go
	util::AvSet *set = util::AvSet::find_collective(where->set, where->coll_addr);
	if (!set || &set->av() != av())
		return -FI_EINVAL;
	std::vector<fi_addr_t> members = set->members();
	size_t rank = members.size();
	uint64_t hash = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < members.size(); ++i) {
		PeerName name;
		if (!av()->address_of(members[i], &name))
			return -FI_EINVAL; // removed from the AV since it entered the set
		if (rank == members.size() && name.view() == own_name_)
			rank = i;
		hash = hash_members(hash, name.view());
	}
	if (rank == members.size())
		return -FI_EINVAL; // we are not in the set
	if (!coll_)
		coll_ = std::make_unique<CollState>();
	uint64_t &joins = coll_->joins_of_set[hash];
	uint64_t wire_id = mix64(hash ^ mix64(joins));
	if (coll_->by_wire_id.count(wire_id))
		return -FI_EALREADY; // a 64-bit collision with a group we are in: refuse it
	fi_addr_t handle = kGroupHandleBits | ++coll_->next_handle;
	auto group = std::make_unique<CollGroup>(*this, std::move(members), rank, wire_id,
						 eager_limit_);
	auto object = std::make_unique<RxmMc>(*this, handle, context);
	CollGroup *g = group.get();
	g->mc = object.get();
	coll_->by_wire_id.emplace(wire_id, std::move(group));
	coll_->by_handle.emplace(handle, g);
	joins++;
	*mc = object.release()->mc_fid();

	// The join's barrier; then what members sent before we joined.
	g->group.barrier(nullptr);
	for (auto it = coll_->orphans.begin(); it != coll_->orphans.end();) {
		if (it->wire_id != wire_id) {
			++it;
			continue;
		}
		CollState::Parked &parked = coll_->parked[it->from];
		parked.count--;
		parked.bytes -= it->payload.size();
		size_t from = g->rank_of(it->from);
		if (from == g->members.size())
			RXM_WARN(FI_LOG_EP_DATA, "held collective message from a non-member "
						 "dropped\n");
		else
			g->group.deliver(from, it->seq, it->step, it->payload);
		it = coll_->orphans.erase(it);
	}
	reap_collectives(*g);
	return 0;
}

void RxmEndpoint::leave(RxmMc *mc)
{
	std::lock_guard guard(lock_);
	auto it = coll_->by_handle.find(mc->handle());
	if (it == coll_->by_handle.end())
		return;
	CollGroup *g = it->second;
	// What finished is reported as it ended (its messages stay queued and still go out);
	// what still runs ends with -FI_ECANCELED. A pending join is not reported: its fid is
	// going away.
	g->mc = nullptr;
	g->unsent.clear();
	reap_collectives(*g);
	g->group.cancel();
	util::coll::Done done;
	while (g->group.pop_done(&done))
		report_collective(*g, {done.context, -FI_ECANCELED});
	coll_->by_handle.erase(it);
	coll_->by_wire_id.erase(g->wire_id);
}

// ---- RxmEndpoint: the collectives ----

CollGroup *RxmEndpoint::group_of(fi_addr_t coll_addr)
{
	if (!coll_)
		return nullptr;
	auto it = coll_->by_handle.find(coll_addr);
	return it == coll_->by_handle.end() ? nullptr : it->second;
}

template <class Issue>
ssize_t RxmEndpoint::issue_collective(fi_addr_t coll_addr, uint64_t flags, Issue issue)
{
	std::lock_guard guard(lock_);
	if (!enabled())
		return -FI_EOPBADSTATE;
	CollGroup *g = group_of(coll_addr);
	if (!g)
		return -FI_EINVAL;
	int ret = issue(*g);
	if (ret)
		return ret;
	g->op_flags.push_back(tx_op_flags() | flags);
	reap_collectives(*g);
	return 0;
}

namespace {

// Bytes of count elements of datatype, if one collective may carry factor * count of them
// (coll_max_count, what fi_query_collective reports). Returns 0 or -FI_E*.
int payload_bytes(unsigned datatype, size_t count, size_t factor, size_t *bytes)
{
	size_t elem = datatype <= UINT8_MAX ? atomic_datatype_size(static_cast<uint8_t>(datatype))
					    : 0;
	if (!elem)
		return -FI_EINVAL;
	if (count > coll_max_count(elem) / factor)
		return -FI_EMSGSIZE;
	*bytes = count * elem;
	return 0;
}

} // namespace

ssize_t RxmEndpoint::barrier(fi_addr_t coll_addr, void *context)
{
	return issue_collective(coll_addr, 0,
				[&](CollGroup &g) { return g.group.barrier(context); });
}

ssize_t RxmEndpoint::broadcast(void *buf, size_t count, void *, fi_addr_t coll_addr,
			       fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags,
			       void *context)
{
	return issue_collective(coll_addr, flags, [&](CollGroup &g) {
		size_t bytes = 0;
		int ret = payload_bytes(util::raw_enum(datatype), count, 1, &bytes);
		if (ret)
			return ret;
		size_t root = g.rank_of(root_addr);
		if (root == g.members.size())
			return -FI_EINVAL;
		return g.group.broadcast(buf, bytes, root, context);
	});
}

ssize_t RxmEndpoint::allreduce(const void *buf, size_t count, void *, void *result, void *,
			       fi_addr_t coll_addr, enum fi_datatype datatype, enum fi_op op,
			       uint64_t flags, void *context)
{
	return issue_collective(coll_addr, flags, [&](CollGroup &g) {
		unsigned dt = util::raw_enum(datatype), reduce_op = util::raw_enum(op);
		size_t bytes = 0;
		int ret = payload_bytes(dt, count, 1, &bytes);
		if (ret)
			return ret;
		if (!coll_reduce_supported(reduce_op, dt))
			return -FI_EOPNOTSUPP;
		return g.group.allreduce(buf, result, count, atomic_datatype_size(dt),
					 static_cast<int>(dt), static_cast<int>(reduce_op),
					 context);
	});
}

ssize_t RxmEndpoint::allgather(const void *buf, size_t count, void *, void *result, void *,
			       fi_addr_t coll_addr, enum fi_datatype datatype, uint64_t flags,
			       void *context)
{
	return issue_collective(coll_addr, flags, [&](CollGroup &g) {
		size_t bytes = 0;
		// The gathered vector (members * count) travels whole in the second phase.
		int ret = payload_bytes(util::raw_enum(datatype), count, g.members.size(), &bytes);
		if (ret)
			return ret;
		return g.group.allgather(buf, result, bytes, context);
	});
}

ssize_t RxmEndpoint::scatter(const void *buf, size_t count, void *, void *result, void *,
			     fi_addr_t coll_addr, fi_addr_t root_addr, enum fi_datatype datatype,
			     uint64_t flags, void *context)
{
	return issue_collective(coll_addr, flags, [&](CollGroup &g) {
		size_t bytes = 0;
		// count: elements each member receives; the root's buf holds members * count.
		int ret = payload_bytes(util::raw_enum(datatype), count, g.members.size(), &bytes);
		if (ret)
			return ret;
		size_t root = g.rank_of(root_addr);
		if (root == g.members.size())
			return -FI_EINVAL;
		return g.group.scatter(buf, result, bytes, root, context);
	});
}

// ---- RxmDomain ----

int RxmDomain::query_collective(enum fi_collective_op coll, struct fi_collective_attr *attr,
				uint64_t flags)
{
	if (!attr)
		return -FI_EINVAL;
	// fi_collective(3): FI_SCATTER asks about reduce-scatter, which rxm does not run.
	if (flags == FI_SCATTER)
		return -FI_ENOSYS;
	if (flags)
		return -FI_EBADFLAGS;
	unsigned dt = util::raw_enum(attr->datatype);
	size_t elem = dt <= UINT8_MAX ? atomic_datatype_size(static_cast<uint8_t>(dt)) : 0;
	switch (util::raw_enum(coll)) {
	case FI_BARRIER:
		elem = 0; // no data
		break;
	case FI_BROADCAST:
	case FI_ALLGATHER:
	case FI_SCATTER:
		if (!elem)
			return -FI_EOPNOTSUPP;
		break;
	case FI_ALLREDUCE:
		if (!elem || !coll_reduce_supported(util::raw_enum(attr->op), dt))
			return -FI_EOPNOTSUPP;
		break;
	default: // alltoall, reduce_scatter, reduce, gather, and names rxm does not know
		return -FI_ENOSYS;
	}
	attr->datatype_attr.size = elem;
	// The payload bound of one collective; allgather and scatter move members * count
	// elements, which must stay within it.
	attr->datatype_attr.count = elem ? coll_max_count(elem) : 0;
	attr->max_members = SIZE_MAX;
	attr->mode = 0;
	return 0;
}

UTIL_ASSERT_IMPLEMENTED(util::make_domain_ops<RxmDomain>().query_collective);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<RxmEndpoint>().join);
UTIL_ASSERT_IMPLEMENTED(util::make_collective_ops<RxmEndpoint>().barrier);
UTIL_ASSERT_IMPLEMENTED(util::make_collective_ops<RxmEndpoint>().broadcast);
UTIL_ASSERT_IMPLEMENTED(util::make_collective_ops<RxmEndpoint>().allreduce);
UTIL_ASSERT_IMPLEMENTED(util::make_collective_ops<RxmEndpoint>().allgather);
UTIL_ASSERT_IMPLEMENTED(util::make_collective_ops<RxmEndpoint>().scatter);

} // namespace rxm
