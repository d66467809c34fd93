// Connection management: connections are opened at the first send to a peer, accepted when a
// peer's request arrives, and the rules of rxm_conn_rules.h keep exactly one connection per
// pair of endpoints. Everything runs from progress (the core EQ is read there).
#include "prov/rxm/rxm_av.h"
#include "prov/rxm/rxm_conn_rules.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/util/remote_write_context.h"

#include <rdma/fi_errno.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <new>

namespace rxm {

using Clock = std::chrono::steady_clock;

// How long a requester rejected as a duplicate waits before asking again: the peer needs a
// moment to notice that the connection it still holds is dead.
constexpr auto kDuplicateRetryDelay = std::chrono::milliseconds(100);

static const char *action_name(ConnreqAction action)
{
	switch (action) {
	case ConnreqAction::accept: return "accept";
	case ConnreqAction::accept_self: return "accept (self)";
	case ConnreqAction::accept_replacing: return "accept, replacing the dead connection";
	case ConnreqAction::reject_live_peer: return "reject (the connection to that name is alive)";
	case ConnreqAction::accept_dropping_ours: return "accept, dropping our own attempt";
	case ConnreqAction::reject_simultaneous: return "reject (simultaneous, ours wins)";
	case ConnreqAction::reject_duplicate: return "reject (duplicate)";
	}
	return "?";
}

static const char *state_name(ConnState state)
{
	switch (state) {
	case ConnState::connecting: return "connecting";
	case ConnState::accepting: return "accepting";
	case ConnState::connected: return "connected";
	case ConnState::waiting_for_peer: return "waiting for peer";
	case ConnState::closed: return "closed";
	}
	return "?";
}

size_t RxmEndpoint::own_cm_data(uint8_t *out, RejectReason reason, const RxmConn *conn) const
{
	CmData cm;
	cm.reject_reason = reason;
	cm.conn_id = srx_ && conn ? conn->id : 0;
	cm.credits = granted_credits(); // 0 when the core does its own flow control
	cm.eager_size = static_cast<uint32_t>(eager_limit_);
	cm.identity = identity_;
	return encode_cm_data(cm, out);
}

// Connection ids: the slot in conns_ (plus one) in the low bits, a per-endpoint random
// value plus the slot's use count in the high ones, so a message naming a connection by id
// cannot be routed to another connection (or to the next user of a released slot) by a
// stale or guessed small number.
constexpr uint32_t kConnIndexBits = 20;
constexpr uint32_t kConnIndexMask = (1u << kConnIndexBits) - 1;

RxmConn *RxmEndpoint::new_conn()
{
	uint32_t slot;
	if (!free_conn_slots_.empty()) {
		slot = free_conn_slots_.back();
		free_conn_slots_.pop_back();
	} else {
		conns_.emplace_back();
		conn_slot_uses_.push_back(0);
		slot = static_cast<uint32_t>(conns_.size());
	}
	conns_[slot - 1] = std::make_unique<RxmConn>(this);
	RxmConn *conn = conns_[slot - 1].get();
	conn->slot = slot;
	live_conns_++;
	uint32_t high = conn_id_nonce_ + conn_slot_uses_[slot - 1]++;
	conn->id = slot <= kConnIndexMask ? (high << kConnIndexBits) | slot : 0;
	return conn;
}

RxmConn *RxmEndpoint::conn_by_id(uint32_t id) const
{
	uint32_t index = id & kConnIndexMask;
	if (index == 0 || index > conns_.size())
		return nullptr;
	RxmConn *conn = conns_[index - 1].get();
	return conn && conn->id == id ? conn : nullptr;
}

size_t RxmEndpoint::connection_count()
{
	std::lock_guard guard(lock_);
	return live_conns_;
}

void RxmEndpoint::mark_closed(RxmConn *conn)
{
	conn->state = ConnState::closed;
	routes_changed(); // conn_for_send makes a new connection for this peer now
	if (!conn->trim_listed) {
		conn->trim_listed = true;
		trim_candidates_.push_back(conn);
	}
}

// A closed connection can go once no operation, buffer, queued message or list refers to
// it. Runs on the control path only (after core endpoints were closed, after AV removals,
// and now and then while candidates wait), so scanning the pools is fine.
bool RxmEndpoint::conn_referenced(const RxmConn *conn) const
{
	if (conn->state != ConnState::closed || conn->core_ep || conn->credit_waiting ||
	    conn->shm_ep || conn->backlog_listed())
		return true;
	auto mapped = peers_.find(conn->peer_name);
	if (mapped != peers_.end() && mapped->second == conn)
		return true;
	for (const auto *list : {&retired_, &closing_, &shm_retired_, &shm_closing_})
		for (const RetiredCoreEp &r : *list)
			if (r.conn == conn)
				return true;
	for (const TxBuffer &b : tx_buffers_)
		if (b.conn == conn || b.charged == conn)
			return true;
	if (conn->ops_held || conn->tx_buffers_held)
		return true;
	for (const TxOp &op : ops_)
		if (op.in_use && op.conn == conn)
			return true;
	for (const RecvOp &op : recvs_)
		if (op.in_use && op.conn == conn)
			return true;
	return matcher_.any_unexpected([conn](const UnexpectedMsg &m) {
		return static_cast<const Unexpected *>(m.owner)->conn == conn;
	});
}

void RxmEndpoint::trim_conns()
{
	std::vector<RxmConn *> keep;
	for (RxmConn *conn : trim_candidates_) {
		if (conn_referenced(conn)) {
			keep.push_back(conn);
			continue;
		}
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p to %s: released\n", static_cast<void *>(conn),
			 describe_address(conn->peer_name.view()).c_str());
		if (conn->rx_mr)
			fi_close(&conn->rx_mr->fid);
		uint32_t slot = conn->slot;
		conns_[slot - 1].reset();
		free_conn_slots_.push_back(slot);
		live_conns_--;
	}
	trim_candidates_.swap(keep);
}

// The connection a send to dest takes. The answer for an AV entry stays the same until the
// entry is removed (the AV's generation), peers_ maps a name to another connection or one
// closes (routes_epoch_): until then it comes from send_routes_, without the AV lookup under
// its lock and the hash of the peer's name that finding it costs.
RxmConn *RxmEndpoint::conn_for_send(fi_addr_t dest, int *err)
{
	RxmAv *table = av();
	if (!table) {
		*err = -FI_EINVAL;
		return nullptr;
	}
	// Read before the lookup: a removal racing with it leaves a route that misses next time.
	uint64_t generation = table->generation();
	if (dest < send_routes_.size()) {
		const SendRoute &route = send_routes_[dest];
		if (route.epoch == routes_epoch_ && route.av_generation == generation)
			return route.conn;
	}
	PeerName name;
	if (!table->address_of(dest, &name)) {
		*err = -FI_EINVAL;
		return nullptr;
	}
	auto it = peers_.find(name);
	if (it != peers_.end() && it->second->state != ConnState::closed) {
		remember_route(dest, it->second, generation);
		return it->second;
	}
	RxmConn *conn = new_conn();
	conn->peer_name = name;
	conn->deadline = setup_deadline();
	conn_timers_active_ = true;
	RXM_INFO(FI_LOG_EP_CTRL, "conn %p: connecting to %s\n", static_cast<void *>(conn),
		 describe_address(name.view()).c_str());
	int ret = start_connect(conn);
	if (ret) {
		RXM_WARN(FI_LOG_EP_CTRL, "connecting to a peer: %s\n", fi_strerror(-ret));
		close_core(conn);
		mark_closed(conn);
		*err = ret == -FI_EAGAIN ? -FI_EAGAIN : ret;
		return nullptr;
	}
	peers_[name] = conn;
	routes_changed();
	remember_route(dest, conn, generation);
	return conn;
}

void RxmEndpoint::remember_route(fi_addr_t dest, RxmConn *conn, uint64_t av_generation)
{
	// dest is a live AV entry (its lookup succeeded), so the table is as long as the AV.
	if (dest >= send_routes_.size()) {
		try {
			send_routes_.resize(dest + 1);
		} catch (const std::bad_alloc &) {
			return; // no route kept: the next send looks the peer up again
		}
	}
	send_routes_[dest] = {conn, av_generation, routes_epoch_};
}

int offer_remote_write_context(struct fid_ep *core_ep, RxmConn *conn)
{
	void *ctx = &conn->remote_writes;
	int ret = fi_setopt(&core_ep->fid, FI_OPT_ENDPOINT, OFI_OPT_REMOTE_WRITE_CONTEXT, &ctx,
			    sizeof(ctx));
	return ret == -FI_ENOPROTOOPT ? 0 : ret;
}

int RxmEndpoint::setup_core_ep(RxmConn *conn, struct fi_info *info)
{
	if (srx_ && info->ep_attr)
		info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	int ret = fi_endpoint(domain_->core(), info, &conn->core_ep, conn);
	if (ret)
		return ret;
	core_eps_changed_++; // progress() polls the core on every pass again (core_quiet)
	ret = offer_remote_write_context(conn->core_ep, conn);
	if (ret)
		return ret;
	ret = fi_ep_bind(conn->core_ep, &core_eq_->fid, 0);
	if (!ret)
		ret = fi_ep_bind(conn->core_ep, &core_cq_->fid, FI_TRANSMIT | FI_RECV);
	if (!ret && srx_)
		ret = fi_ep_bind(conn->core_ep, &srx_->fid, 0);
	if (!ret && core_remote_cntr_[0])
		ret = fi_ep_bind(conn->core_ep, &core_remote_cntr_[0]->fid, FI_REMOTE_READ);
	if (!ret && core_remote_cntr_[1])
		ret = fi_ep_bind(conn->core_ep, &core_remote_cntr_[1]->fid, FI_REMOTE_WRITE);
	if (!ret)
		ret = fi_enable(conn->core_ep);
	if (ret)
		return ret;
	if (srx_) {
		conn->rx_posted = true; // the endpoint's shared buffers serve this connection
		start_core_inplace(conn);
		return 0;
	}
	size_t count = params().msg_rx_size;
	size_t size = kWireHeaderSize + eager_limit_;
	if (!conn->rx_slab.allocate(count * size))
		return -FI_ENOMEM;
	conn->rx.resize(count);
	if (domain_->core_needs_local_mr()) {
		ret = domain_->register_internal(conn->rx_slab.data(), conn->rx_slab.size(),
						 FI_RECV, &conn->rx_mr);
		if (ret)
			return ret;
	}
	for (size_t i = 0; i < count; i++) {
		RxBuffer &b = conn->rx[i];
		b.core.kind = CoreOpKind::rx_buffer;
		b.core.owner = nullptr;
		b.conn = conn;
		b.data = conn->rx_slab.data() + i * size;
	}
	start_core_inplace(conn); // before any receive can take a message (rxm_shm_direct.cpp)
	// Receives go up before the connection does, so nothing the peer sends first is lost;
	// cores that refuse that get them on FI_CONNECTED.
	void *desc = conn->rx_mr ? fi_mr_desc(conn->rx_mr) : nullptr;
	conn->rx_posted = true;
	for (size_t i = 0; i < count; i++) {
		ssize_t r = fi_recv(conn->core_ep, conn->rx[i].data, size, desc, 0, &conn->rx[i].core);
		if (r) {
			if (i != 0)
				return static_cast<int>(r);
			conn->rx_posted = false;
			break;
		}
	}
	return 0;
}

int RxmEndpoint::bind_connections_to_own_ip()
{
	sockaddr_storage sa{};
	if (own_name_.size() > sizeof(sa))
		return 0;
	memcpy(&sa, own_name_.data(), own_name_.size());
	size_t len = 0;
	if (sa.ss_family == AF_INET && own_name_.size() == sizeof(sockaddr_in)) {
		auto *in = reinterpret_cast<sockaddr_in *>(&sa);
		if (in->sin_addr.s_addr == htonl(INADDR_ANY))
			return 0; // no IP of our own to show (and the check sees no IP to compare)
		in->sin_port = 0;
		len = sizeof(sockaddr_in);
	} else if (sa.ss_family == AF_INET6 && own_name_.size() == sizeof(sockaddr_in6)) {
		auto *in6 = reinterpret_cast<sockaddr_in6 *>(&sa);
		if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			return 0;
		in6->sin6_port = 0;
		len = sizeof(sockaddr_in6);
	} else {
		return 0;
	}
	void *copy = malloc(len);
	if (!copy)
		return -FI_ENOMEM;
	memcpy(copy, &sa, len);
	free(core_conn_info_->src_addr);
	core_conn_info_->src_addr = copy;
	core_conn_info_->src_addrlen = len;
	return 0;
}

int RxmEndpoint::start_connect(RxmConn *conn)
{
	int ret = setup_core_ep(conn, core_conn_info_);
	if (ret)
		return ret;
	uint8_t cm[kCmMaxSize];
	size_t len = own_cm_data(cm, RejectReason::none, conn);
	conn->state = ConnState::connecting;
	return fi_connect(conn->core_ep, conn->peer_name.data(), cm, len);
}

void RxmEndpoint::close_core(RxmConn *conn)
{
	if (conn->core_ep) {
		stop_core_inplace(conn);
		retired_.push_back({conn, conn->core_ep});
		conn->core_ep = nullptr; // its events and completions no longer reach this conn
	}
}

// Reads the core CQ until it reports nothing (bounded: a core that keeps completing is
// read again by the next progress call). True when it was seen empty.
bool RxmEndpoint::drain_core_cq_until_empty()
{
	for (int i = 0; i < 256; i++)
		if (drain_core_cq() == 0)
			return true;
	return false;
}

void RxmEndpoint::close_retired()
{
	close_shm_retired(); // before the core's: finish_core_held must see no shm completion
	if (!retired_.empty()) {
		std::vector<RetiredCoreEp> batch;
		batch.swap(retired_);
		// Closed first: the core then writes nothing more for them (a core that flushes
		// on disconnect has written its flushed completions already).
		for (RetiredCoreEp &r : batch)
			fi_close(&r.ep->fid);
		set_aside_eq_events(batch);
		closing_.insert(closing_.end(), batch.begin(), batch.end());
	}
	if (closing_.empty())
		return;
	// What the core completed before the close is handled the normal way, so no buffer is
	// both completed by the core and finished by finish_core_held, and no completion read
	// later points into receive buffers freed here.
	if (!drain_core_cq_until_empty())
		return;
	std::vector<RetiredCoreEp> batch;
	batch.swap(closing_);
	for (RetiredCoreEp &r : batch) {
		RxmConn *conn = r.conn;
		if (conn->close_error) // failed (abandoned attempts held nothing)
			finish_core_held(conn, conn->close_error);
		// A connection never gets another core endpoint: its receive buffers can go.
		if (conn->rx_mr)
			fi_close(&conn->rx_mr->fid);
		conn->rx_mr = nullptr;
		conn->rx_posted = false;
		std::vector<RxBuffer>().swap(conn->rx);
		conn->rx_slab.release();
	}
	post_pending_reads(); // reads of failed connections finish with their error
	trim_conns();
}

// Events the core queued for endpoints it has now closed are dropped: a later endpoint may
// get the same fid address. The others are kept, in order, for drain_core_eq.
void RxmEndpoint::set_aside_eq_events(const std::vector<RetiredCoreEp> &closed)
{
	read_core_eq_ahead();
	std::erase_if(eq_backlog_, [&](CoreEqEvent &ev) {
		fid_t fid = ev.fid();
		for (const RetiredCoreEp &r : closed) {
			if (fid == &r.ep->fid) {
				RXM_INFO(FI_LOG_EP_CTRL, "dropping %s of a closed core endpoint\n",
					 ev.error ? "an error event" : "an event");
				return true;
			}
		}
		return false;
	});
}

// Moves what the core EQ holds, in order, to eq_backlog_ (drain_core_eq handles it there).
void RxmEndpoint::read_core_eq_ahead()
{
	alignas(fi_eq_cm_entry) uint8_t buf[sizeof(fi_eq_cm_entry) + 256];
	for (;;) {
		CoreEqEvent ev;
		ssize_t n = fi_eq_read(core_eq_, &ev.event, buf, sizeof(buf), 0);
		if (n == -FI_EAVAIL) {
			if (fi_eq_readerr(core_eq_, &ev.err, 0) < 0)
				break;
			ev.error = true;
			if (ev.err.err_data && ev.err.err_data_size) {
				auto *data = static_cast<const uint8_t *>(ev.err.err_data);
				ev.err_data.assign(data, data + ev.err.err_data_size);
			}
			ev.err.err_data = nullptr;
		} else if (n >= static_cast<ssize_t>(sizeof(fi_eq_cm_entry))) {
			ev.entry.assign(buf, buf + n);
		} else {
			break;
		}
		eq_backlog_.push_back(std::move(ev));
	}
}

// A connection is known dead once its core said so: a failed completion (handled while the
// CQ is drained, it closes the connection) or a shutdown or error event for its endpoint.
// A restarted process's old socket was closed by its kernel, so that news is usually there
// already; otherwise probe_connection provokes it.
bool RxmEndpoint::connection_known_dead(RxmConn *conn)
{
	if (conn->state == ConnState::closed || !conn->core_ep)
		return true;
	drain_core_cq_until_empty();
	if (conn->state == ConnState::closed || !conn->core_ep)
		return true;
	read_core_eq_ahead();
	for (CoreEqEvent &ev : eq_backlog_)
		if (ev.fid() == &conn->core_ep->fid && (ev.error || ev.event == FI_SHUTDOWN))
			return true;
	return false;
}

// Sends a message every rxm peer ignores (rxm_wire.h, kLivenessProbeMsgId) on a connection
// that looks alive while someone else claims its peer's name. A live peer absorbs it; a dead
// one's transport answers with an error (TCP reset, RC retry exhaustion), which closes the
// connection, so the claimant's next retry is accepted. At most one per retry interval.
void RxmEndpoint::probe_connection(RxmConn *conn)
{
	if (conn->state != ConnState::connected)
		return;
	Clock::time_point now = Clock::now();
	if (conn->last_probe != Clock::time_point{} && now - conn->last_probe < kDuplicateRetryDelay)
		return;
	conn->last_probe = now;
	send_control(conn, WireOp::delivery_ack, kLivenessProbeMsgId, 0);
}

void RxmEndpoint::handle_core_eq_event(CoreEqEvent &ev)
{
	if (ev.error) {
		ev.err.err_data = ev.err_data.empty() ? nullptr : ev.err_data.data();
		ev.err.err_data_size = ev.err_data.size();
		handle_eq_error(ev.err);
		return;
	}
	handle_eq_event(ev.event, reinterpret_cast<fi_eq_cm_entry *>(ev.entry.data()),
			ev.entry.size());
}

// Moves the queued sends of one connection attempt to the connection that replaces it, with
// their charges against the peer's share.
static void move_backlog(RxmConn *from, RxmConn *to)
{
	while (TxOp *op = from->backlog.pop_front()) {
		op->conn = to;
		if (op->charged == from) {
			from->ops_held--;
			to->ops_held++;
			op->charged = to;
		}
		if (op->prepared && op->prepared->charged == from) {
			from->tx_buffers_held--;
			to->tx_buffers_held++;
			op->prepared->charged = to;
		}
		to->backlog.push_back(op);
	}
}

void RxmEndpoint::handle_connreq(const struct fi_eq_cm_entry *entry, size_t data_len)
{
	fi_info *info = entry->info;
	uint8_t reply[kCmMaxSize];
	CmData cm;
	if (!info || decode_cm_data({entry->data, data_len}, &cm)) {
		RXM_WARN(FI_LOG_EP_CTRL, "connection request without valid rxm data refused\n");
		if (info) {
			size_t len = own_cm_data(reply, RejectReason::bad_request);
			fi_reject(pep_, info->handle, reply, len);
		}
		fi_freeinfo(info);
		return;
	}
	PeerName name;
	if (!name.assign(canonical_address(cm.identity.name, cm.identity.name_len))) {
		RXM_WARN(FI_LOG_EP_CTRL, "connection request with an oversized name refused\n");
		size_t len = own_cm_data(reply, RejectReason::bad_request);
		fi_reject(pep_, info->handle, reply, len);
		fi_freeinfo(info);
		return;
	}
	ClaimCheck claim = check_claimed_source(cm.identity.name_bytes(),
						{static_cast<const uint8_t *>(info->dest_addr),
						 info->dest_addr ? info->dest_addrlen : 0});
	if (claim == ClaimCheck::disagrees) {
		RXM_INFO(FI_LOG_EP_CTRL, "request from %s claiming the name %s refused: the name's "
					 "IP is not the connection's\n",
			 describe_address({static_cast<const char *>(info->dest_addr),
					   info->dest_addrlen}).c_str(),
			 describe_address(name.view()).c_str());
		size_t len = own_cm_data(reply, RejectReason::bad_request);
		fi_reject(pep_, info->handle, reply, len);
		fi_freeinfo(info);
		return;
	}
	auto it = peers_.find(name);
	RxmConn *existing = it != peers_.end() ? it->second : nullptr;
	PeerConnState state = PeerConnState::none;
	if (existing && existing->state == ConnState::connecting)
		state = PeerConnState::connecting;
	else if (existing &&
		 (existing->state == ConnState::connected || existing->state == ConnState::accepting))
		state = PeerConnState::connected;
	uint64_t known_peer_id = existing ? existing->peer_identity.endpoint_id : 0;
	ConnreqAction action = decide_connreq(identity_, cm.identity, state, known_peer_id);
	if (action == ConnreqAction::reject_live_peer && connection_known_dead(existing))
		action = decide_connreq(identity_, cm.identity, state, known_peer_id, true);
	RXM_INFO(FI_LOG_EP_CTRL, "request from %s (id %016llx; ours: conn %p %s): %s\n",
		 describe_address(name.view()).c_str(),
		 static_cast<unsigned long long>(cm.identity.endpoint_id),
		 static_cast<void *>(existing), existing ? state_name(existing->state) : "none",
		 action_name(action));
	if (action == ConnreqAction::reject_live_peer)
		probe_connection(existing); // a restarted peer's retry then finds it dead
	if (action == ConnreqAction::reject_simultaneous ||
	    action == ConnreqAction::reject_duplicate ||
	    action == ConnreqAction::reject_live_peer) {
		// A live peer's name claimed again is answered like a duplicate: a genuinely
		// restarted requester retries every kDuplicateRetryDelay until its timeout.
		size_t len = own_cm_data(reply, action == ConnreqAction::reject_simultaneous
							? RejectReason::simultaneous
							: RejectReason::duplicate);
		fi_reject(pep_, info->handle, reply, len);
		fi_freeinfo(info);
		return;
	}

	RxmConn *conn = new_conn();
	conn->peer_name = name;
	conn->peer_identity = cm.identity;
	conn->peer_eager_size = cm.eager_size;
	conn->deadline = setup_deadline();
	conn_timers_active_ = true;
	conn->peer_credit_grant = cm.credits;
	conn->peer_conn_id = cm.conn_id;
	switch (action) {
	case ConnreqAction::accept_self:
		conn->receive_only = true; // our own request: sends use the connecting half
		break;
	case ConnreqAction::accept_replacing:
		fail_conn(existing, -FI_ECONNRESET); // known dead: the old instance is gone
		peers_[name] = conn;
		routes_changed();
		break;
	case ConnreqAction::accept_dropping_ours:
	case ConnreqAction::accept:
		if (existing && existing->state != ConnState::closed) {
			// Our own attempt (lost race or waiting for this request) yields its queue.
			move_backlog(existing, conn);
			close_core(existing);
			mark_closed(existing);
		}
		peers_[name] = conn;
		routes_changed();
		break;
	default:
		break;
	}
	int ret = setup_core_ep(conn, info);
	if (!ret) {
		size_t len = own_cm_data(reply, RejectReason::none, conn);
		ret = fi_accept(conn->core_ep, reply, len);
	}
	if (ret) {
		RXM_WARN(FI_LOG_EP_CTRL, "accepting a connection: %s\n", fi_strerror(-ret));
		size_t len = own_cm_data(reply, RejectReason::bad_request);
		fi_reject(pep_, info->handle, reply, len);
		fail_conn(conn, ret);
	} else {
		conn->state = ConnState::accepting;
	}
	fi_freeinfo(info);
}

void RxmEndpoint::on_connected(RxmConn *conn)
{
	if (conn->state == ConnState::closed)
		return;
	bool accepted = conn->state == ConnState::accepting;
	conn->state = ConnState::connected;
	conn->deadline = {};
	conn->retry_at = {};
	if (!conn->rx_posted) {
		void *desc = conn->rx_mr ? fi_mr_desc(conn->rx_mr) : nullptr;
		for (RxBuffer &b : conn->rx)
			fi_recv(conn->core_ep, b.data, kWireHeaderSize + eager_limit_, desc, 0, &b.core);
		conn->rx_posted = true;
	}
	start_flow_control(conn);
	pump(conn);
	post_pending_reads();
	if (accepted)
		shm_offer(conn); // the acceptor offers the move to shm (rxm_shm.cpp)
}

// The connection whose current core endpoint is fid. The fid is not dereferenced: events of
// retired endpoints find no connection and are ignored.
RxmConn *RxmEndpoint::conn_of(fid_t fid) const
{
	if (!fid)
		return nullptr;
	for (const auto &c : conns_)
		if (c && c->core_ep && &c->core_ep->fid == fid)
			return c.get();
	return nullptr;
}

void RxmEndpoint::handle_eq_event(uint32_t event, const struct fi_eq_cm_entry *entry, size_t len)
{
	if (len < sizeof(fi_eq_cm_entry))
		return;
	size_t data_len = len - sizeof(fi_eq_cm_entry);
	switch (event) {
	case FI_CONNREQ:
		handle_connreq(entry, data_len);
		break;
	case FI_CONNECTED: {
		RxmConn *conn = conn_of(entry->fid);
		if (!conn)
			break;
		CmData cm;
		if (conn->state == ConnState::connecting &&
		    decode_cm_data({entry->data, data_len}, &cm) == 0) {
			conn->peer_identity = cm.identity;
			conn->peer_eager_size = cm.eager_size;
			conn->peer_credit_grant = cm.credits;
			conn->peer_conn_id = cm.conn_id;
		}
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p to %s: connected (was %s)\n",
			 static_cast<void *>(conn), describe_address(conn->peer_name.view()).c_str(),
			 state_name(conn->state));
		on_connected(conn);
		break;
	}
	case FI_SHUTDOWN: {
		RxmConn *conn = conn_of(entry->fid);
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p: shutdown by the peer\n", static_cast<void *>(conn));
		if (conn) {
			// Messages the peer sent before closing may still sit in the core CQ
			// (followed by the receives the core flushed).
			drain_core_cq_until_empty();
			drain_shm_until_empty(); // and what it sent over shm, if it moved there
			fail_conn(conn, -FI_ECONNRESET);
		}
		break;
	}
	default:
		break;
	}
}

void RxmEndpoint::handle_eq_error(const struct fi_eq_err_entry &err)
{
	RxmConn *conn = conn_of(err.fid);
	if (!conn) {
		RXM_INFO(FI_LOG_EP_CTRL, "core EQ error of a closed attempt: %s\n",
			 fi_strerror(err.err));
		return;
	}
	RXM_INFO(FI_LOG_EP_CTRL, "conn %p to %s (%s): %s, %zu bytes of reject data\n",
		 static_cast<void *>(conn), describe_address(conn->peer_name.view()).c_str(),
		 state_name(conn->state), fi_strerror(err.err), err.err_data_size);
	CmData cm;
	if (err.err == FI_ECONNREFUSED && err.err_data && err.err_data_size &&
	    decode_cm_data({static_cast<const uint8_t *>(err.err_data), err.err_data_size}, &cm) == 0 &&
	    decide_rejected(cm.reject_reason) == RejectAction::wait_for_peer) {
		// Simultaneous: the peer's own request wins; its connection will carry our queued
		// sends. Duplicate: the peer still holds our previous connection, which is dead
		// (we only connect when we have none); ask again once it had time to notice.
		close_core(conn);
		if (conn->state == ConnState::connecting) {
			conn->state = ConnState::waiting_for_peer;
			if (cm.reject_reason == RejectReason::duplicate)
				conn->retry_at = Clock::now() + kDuplicateRetryDelay;
		}
		return;
	}
	RXM_WARN(FI_LOG_EP_CTRL, "connection failed: %s\n", fi_strerror(err.err));
	fail_conn(conn, err.err ? -err.err : -FI_ECONNREFUSED);
}

void RxmEndpoint::fail_conn(RxmConn *conn, int err)
{
	if (conn->state == ConnState::closed)
		return;
	mark_closed(conn);
	conn->close_error = err ? err : -FI_ECONNABORTED;
	close_core(conn);
	close_shm(conn);
	auto it = peers_.find(conn->peer_name);
	if (it != peers_.end() && it->second == conn)
		peers_.erase(it); // mark_closed above told conn_for_send
	while (TxOp *op = conn->backlog.pop_front())
		fail_op(op, err);
	while (TxOp *op = conn->awaiting.pop_front())
		fail_op(op, err);
	for (RecvOp *op : conn->write_targets) {
		op->error = err;
		complete_recv(op);
	}
	conn->write_targets.clear();
	if (conn->sar_target) {
		conn->sar_target->error = err;
		complete_recv(conn->sar_target);
		conn->sar_target = nullptr;
	}
	if (conn->sar_unexpected) {
		Matcher::remove_unexpected(&conn->sar_unexpected->match);
		Unexpected *u = conn->sar_unexpected;
		conn->sar_unexpected = nullptr;
		release_unexpected(u);
	}
	// What the core holds (sends, RMA, rendezvous reads) is finished by close_retired once
	// the core endpoint is closed and its completions drained.
	coll_member_lost(conn);
}

// The core reports nothing more for a closed endpoint: finish what it still held.
void RxmEndpoint::finish_core_held(RxmConn *conn, int err)
{
	for (TxBuffer &buf : tx_buffers_)
		if (buf.conn == conn)
			on_tx_buffer_done(&buf, err);
	for (TxOp &op : ops_)
		if (op.in_use && op.conn == conn && op.outstanding &&
		    (op.kind == TxKind::rma_read || op.kind == TxKind::rma_write ||
		     (op.kind == TxKind::rndv && op.writing)))
			on_rma_done(&op, err);
	for (RecvOp &op : recvs_)
		if (op.in_use && op.conn == conn && op.direct_in_core)
			on_direct_recv(&op, 0, err); // the core dropped it with the endpoint
	for (RecvOp &op : recvs_)
		if (op.in_use && op.conn == conn && op.reads_outstanding) {
			op.reads_outstanding = 0;
			conn->reads_in_core = 0;
			op.error = err;
			pending_reads_.push_back(&op);
		}
}

Clock::time_point RxmEndpoint::setup_deadline() const
{
	int seconds = params().conn_timeout_s;
	return seconds > 0 ? Clock::now() + std::chrono::seconds(seconds) : Clock::time_point{};
}

static bool setting_up(const RxmConn *conn)
{
	return conn->state == ConnState::connecting || conn->state == ConnState::accepting ||
	       conn->state == ConnState::waiting_for_peer;
}

// Fails connections whose setup outlived FI_OFI_RXM_CONN_TIMEOUT (their queued sends complete
// with FI_ETIMEDOUT), retries requests rejected as duplicates, and arms the timerfd for the
// next deadline. Runs from progress only while some connection is being set up.
void RxmEndpoint::run_conn_timers()
{
	if (!conn_timers_active_) {
		arm_conn_timer(rndv_read_next_); // sleepers also wake for rendezvous read deadlines
		return;
	}
	Clock::time_point now = Clock::now();
	Clock::time_point next{};
	std::vector<RxmConn *> expired, retry;
	bool remaining = false; // setups that go on after this pass
	for (auto &[name, conn] : peers_) {
		if (!setting_up(conn))
			continue;
		if (conn->deadline != Clock::time_point{}) {
			if (now >= conn->deadline) {
				expired.push_back(conn);
				continue;
			}
			if (next == Clock::time_point{} || conn->deadline < next)
				next = conn->deadline;
		}
		remaining = true;
		if (conn->state == ConnState::waiting_for_peer &&
		    conn->retry_at != Clock::time_point{}) {
			if (now >= conn->retry_at)
				retry.push_back(conn);
			else if (next == Clock::time_point{} || conn->retry_at < next)
				next = conn->retry_at;
		}
	}
	for (RxmConn *conn : expired) {
		RXM_WARN(FI_LOG_EP_CTRL, "connection to %s not established after %d s: failing its "
					 "sends\n", describe_address(conn->peer_name.view()).c_str(),
			 params().conn_timeout_s);
		fail_conn(conn, -FI_ETIMEDOUT);
	}
	for (RxmConn *conn : retry)
		retry_connect(conn);
	conn_timers_active_ = remaining || !retry.empty();
	if (rndv_read_next_ != Clock::time_point{} &&
	    (next == Clock::time_point{} || rndv_read_next_ < next))
		next = rndv_read_next_;
	arm_conn_timer(next); // a retried attempt's deadline is armed on the next pass
}

void RxmEndpoint::retry_connect(RxmConn *old)
{
	RxmConn *conn = new_conn();
	conn->peer_name = old->peer_name;
	conn->deadline = old->deadline;
	move_backlog(old, conn);
	mark_closed(old); // its core endpoint went when it was rejected
	peers_[conn->peer_name] = conn;
	routes_changed();
	RXM_INFO(FI_LOG_EP_CTRL, "conn %p: connecting again to %s (was rejected as a duplicate)\n",
		 static_cast<void *>(conn), describe_address(conn->peer_name.view()).c_str());
	int ret = start_connect(conn);
	if (ret)
		fail_conn(conn, ret);
}

// The timerfd makes fi_cq_sread, fi_cntr_wait and applications polling the FI_GETWAIT fd
// wake up when a connection times out, not only when the core has news.
void RxmEndpoint::arm_conn_timer(Clock::time_point when)
{
	if (conn_timer_fd_ < 0 || when == conn_timer_armed_)
		return;
	itimerspec spec{};
	if (when != Clock::time_point{}) {
		auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(when.time_since_epoch())
				  .count();
		spec.it_value.tv_sec = static_cast<time_t>(ns / 1000000000);
		spec.it_value.tv_nsec = static_cast<long>(ns % 1000000000);
		if (spec.it_value.tv_sec == 0 && spec.it_value.tv_nsec == 0)
			spec.it_value.tv_nsec = 1; // zero would disarm
	}
	// steady_clock is CLOCK_MONOTONIC on Linux, so its time points are absolute times here.
	if (timerfd_settime(conn_timer_fd_, TFD_TIMER_ABSTIME, &spec, nullptr) != 0) {
		RXM_WARN(FI_LOG_EP_CTRL, "arming the connection timer failed\n");
		return;
	}
	uint64_t expirations;
	if (::read(conn_timer_fd_, &expirations, sizeof(expirations)) < 0) {
		// nothing pending: the usual case
	}
	conn_timer_armed_ = when;
}

} // namespace rxm
