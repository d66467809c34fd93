// Same-host peers over shm (rxm_shm.h), setting a connection up: the endpoint's shm side, the
// offer, the proof, the shm connection and the shm_moved markers that hand each direction of
// a connection from the core to shm without letting a message overtake one sent before. The
// data side is rxm_shm.cpp. README.md, "Same-host peers over shm".
#include "prov/rxm/rxm_shm.h"

#include "prov/rxm/rxm_bytes.h"
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/shm/shm_peer_ops.h"
#include "prov/shm/shm_send_ops.h"
#include "prov/util/rx_inplace_ops.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>
#include <random>

namespace rxm {

namespace {

constexpr size_t kShmEqSize = 256;
// CM data of a shm request: the acceptor's connection id (u32 LE), then the offer's secret.
constexpr size_t kShmCmDataSize = 4 + kShmSecretSize;
constexpr const char kShmPrefix[] = "fi_shm://";

const char *state_name(ShmState s)
{
	switch (s) {
	case ShmState::none: return "none";
	case ShmState::offered: return "offered";
	case ShmState::connecting: return "connecting";
	case ShmState::accepting: return "accepting";
	case ShmState::connected: return "connected";
	case ShmState::declined: return "declined";
	}
	return "?";
}

bool setting_up(ShmState s)
{
	return s == ShmState::connecting || s == ShmState::accepting;
}

// Whether the far end of a core connection has one of this host's addresses (one a socket
// of our network namespace can bind). Unknown (no socket address): yes, the proof decides.
bool peer_address_is_local(struct fid_ep *core_ep)
{
	sockaddr_storage peer{};
	size_t len = sizeof(peer);
	if (!core_ep || fi_getpeer(core_ep, &peer, &len) != 0)
		return true;
	socklen_t bind_len;
	if (peer.ss_family == AF_INET) {
		reinterpret_cast<sockaddr_in &>(peer).sin_port = 0;
		bind_len = sizeof(sockaddr_in);
	} else if (peer.ss_family == AF_INET6) {
		auto &in6 = reinterpret_cast<sockaddr_in6 &>(peer);
		in6.sin6_port = 0;
		in6.sin6_flowinfo = 0;
		bind_len = sizeof(sockaddr_in6);
	} else {
		return true;
	}
	int s = socket(peer.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return true;
	bool local = bind(s, reinterpret_cast<sockaddr *>(&peer), bind_len) == 0;
	close(s);
	return local;
}

} // namespace

// Everything rxm can have posted to its shm side at once completes there: sends carry a
// bounce buffer, RMA and rendezvous writes an operation slot, rendezvous reads a receive,
// plus the receive buffers of the moved connections. The CQ keeps what exceeds its ring
// (util's overflow list), so this sizes the common case, not a limit.
size_t RxmEndpoint::shm_cq_size() const
{
	return tx_buffers_.size() + ops_.size() + recvs_.size() + kShmRxBuffers * 64;
}

uint32_t shm_name_pid(const char *name, size_t len)
{
	std::string_view text(name, strnlen(name, len));
	if (!text.starts_with(kShmPrefix))
		return 0;
	text.remove_prefix(sizeof(kShmPrefix) - 1);
	if (text.starts_with("peer."))
		text.remove_prefix(5);
	uint64_t pid = 0;
	size_t digits = 0;
	for (char c : text) {
		if (c == ':')
			break;
		if (c < '0' || c > '9' || ++digits > 10)
			return 0;
		pid = pid * 10 + static_cast<uint64_t>(c - '0');
	}
	return digits && pid > 0 && pid <= INT32_MAX ? static_cast<uint32_t>(pid) : 0;
}

bool RxmEndpoint::shm_wanted() const
{
	if (!params().use_shm || shm_open_failed_)
		return false;
	// Registrations and credits are per core connection; over cores that need them (verbs)
	// the bounce buffers and flow control would have to follow the move too.
	if (domain_->core_needs_local_mr() || domain_->flow_ctrl())
		return false;
	const fi_info *core = domain_->core_info();
	return !(core->fabric_attr && core->fabric_attr->prov_name &&
		 strcmp(core->fabric_attr->prov_name, "shm") == 0);
}

void RxmEndpoint::set_shm_state(RxmConn *conn, ShmState state)
{
	shm_setups_ -= setting_up(conn->shm_state);
	shm_setups_ += setting_up(state);
	RXM_INFO(FI_LOG_EP_CTRL, "conn %p: shm %s -> %s\n", static_cast<void *>(conn),
		 state_name(conn->shm_state), state_name(state));
	conn->shm_state = state;
}

int RxmEndpoint::open_shm()
{
	if (shm_)
		return 0;
	if (shm_open_failed_)
		return -FI_ENODATA;
	std::unique_ptr<ShmPath> path(new (std::nothrow) ShmPath);
	int ret = path ? domain_->open_shm_domain() : -FI_ENOMEM;
	if (!ret) {
		path->info = domain_->shm_info();
		path->fabric = domain_->shm_fabric();
		path->domain = domain_->shm_domain();
	}
	// Wait fds only when the core's were wanted (a bound CQ or counter has a wait object).
	bool want_fd = core_cq_wait_.has_fds();
	if (!ret) {
		fi_eq_attr attr{};
		attr.size = kShmEqSize;
		attr.wait_obj = want_fd ? FI_WAIT_FD : FI_WAIT_NONE;
		ret = fi_eq_open(path->fabric, &attr, &path->eq, nullptr);
	}
	if (!ret) {
		fi_cq_attr attr{};
		attr.size = shm_cq_size();
		attr.format = FI_CQ_FORMAT_DATA;
		attr.wait_obj = want_fd ? FI_WAIT_FD : FI_WAIT_NONE;
		ret = fi_cq_open(path->domain, &attr, &path->cq, nullptr);
		void *ops = nullptr;
		if (!ret && fi_open_ops(&path->cq->fid, OFI_CQ_PROGRESS_OPS_NAME, 0, &ops,
					nullptr) == 0)
			path->cq_progress = static_cast<const ofi_cq_progress_ops *>(ops);
	}
	for (int i = 0; i < 2 && !ret; i++) {
		if (!core_remote_cntr_[i])
			continue;
		fi_cntr_attr attr{};
		attr.events = FI_CNTR_EVENTS_COMP;
		attr.wait_obj = FI_WAIT_NONE;
		ret = fi_cntr_open(path->domain, &attr, &path->remote_cntr[i], nullptr);
	}
	if (!ret)
		ret = fi_passive_ep(path->fabric, const_cast<fi_info *>(path->info), &path->pep,
				    nullptr);
	if (!ret)
		ret = fi_pep_bind(path->pep, &path->eq->fid, 0);
	if (!ret)
		ret = fi_listen(path->pep);
	size_t len = sizeof(path->name);
	if (!ret)
		ret = fi_getname(&path->pep->fid, path->name, &len);
	if (ret) {
		RXM_INFO(FI_LOG_EP_CTRL, "no shm side (%s): peers stay on the core\n",
			 fi_strerror(-ret));
		shm_open_failed_ = true;
		return ret;
	}
	path->iov_limit = std::clamp<size_t>(path->info->tx_attr ? path->info->tx_attr->iov_limit
								 : 1,
					     1, kMaxCoreIov);
	if (want_fd) {
		path->cq_wait.fetch(&path->cq->fid);
		path->eq_wait.fetch(&path->eq->fid);
		if (lower_fds_handed_out_)
			path->cq_wait.hand_out();
	}
	path->polled = !path->cq_wait.has_fds() || !path->eq_wait.has_fds();
	if (fi_open_ops(&path->domain->fid, OFI_SHM_PEER_OPS_NAME, 0,
			reinterpret_cast<void **>(&path->peer_ops), nullptr) != 0)
		path->peer_ops = nullptr;
	if (fi_open_ops(&path->domain->fid, OFI_RX_INPLACE_OPS_NAME, 0,
			reinterpret_cast<void **>(&path->inplace_ops), nullptr) != 0)
		path->inplace_ops = nullptr;
	void *send_ops = nullptr;
	if (fi_open_ops(&path->domain->fid, OFI_SHM_SEND_OPS_NAME, 0, &send_ops, nullptr) == 0)
		path->send_ops = static_cast<const ofi_framed_send_ops *>(send_ops);
	shm_ = std::move(path);
	RXM_INFO(FI_LOG_EP_CTRL, "shm side open, listening on %.*s\n",
		 static_cast<int>(sizeof(shm_->name)), shm_->name);
	shm_register_wait();
	return 0;
}

void RxmEndpoint::shm_offer(RxmConn *conn)
{
	if (!shm_wanted() || conn->receive_only || conn->shm_state != ShmState::none ||
	    conn->state != ConnState::connected)
		return;
	// A peer whose address is none of this host's runs elsewhere (another host, another
	// network namespace): the proof would fail anyway, so no offer goes out.
	if (!peer_address_is_local(conn->core_ep)) {
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p: peer address not on this host: no shm offer\n",
			 static_cast<void *>(conn));
		set_shm_state(conn, ShmState::declined);
		return;
	}
	if (open_shm())
		return;
	std::random_device rd;
	for (size_t i = 0; i < kShmSecretSize; i += 4)
		put_u32(conn->shm_secret + i, rd());
	uint8_t payload[kShmOfferSize];
	memcpy(payload, shm_->name, kShmNameSize);
	memcpy(payload + kShmNameSize, conn->shm_secret, kShmSecretSize);
	put_u32(payload + kShmNameSize + kShmSecretSize, conn->id);
	put_u32(payload + kShmNameSize + kShmSecretSize + 4, 0);
	WireHeader h;
	h.op = WireOp::shm_offer;
	if (!queue_control(conn, h, {payload, sizeof(payload)})) {
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p: no room for a shm offer\n",
			 static_cast<void *>(conn));
		return;
	}
	set_shm_state(conn, ShmState::offered);
}

// Opens a shm endpoint on the endpoint's shm domain, bound to its EQ and CQ.
static int open_shm_ep(const ShmPath &shm, const struct fi_info *info, RxmConn *conn,
		       struct fid_ep **out)
{
	struct fid_ep *ep = nullptr;
	int ret = fi_endpoint(shm.domain, const_cast<fi_info *>(info), &ep, nullptr);
	if (ret)
		return ret;
	ret = offer_remote_write_context(ep, conn);
	if (!ret)
		ret = fi_ep_bind(ep, &shm.eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(ep, &shm.cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret && shm.remote_cntr[0])
		ret = fi_ep_bind(ep, &shm.remote_cntr[0]->fid, FI_REMOTE_READ);
	if (!ret && shm.remote_cntr[1])
		ret = fi_ep_bind(ep, &shm.remote_cntr[1]->fid, FI_REMOTE_WRITE);
	if (!ret)
		ret = fi_enable(ep);
	if (ret) {
		fi_close(&ep->fid);
		return ret;
	}
	*out = ep;
	return 0;
}

void RxmEndpoint::handle_shm_offer(RxmConn *conn, std::span<const uint8_t> payload)
{
	// Only the connector of the core connection answers, once, and only if it wants to.
	if (!shm_wanted() || conn->receive_only || conn->shm_state != ShmState::none ||
	    conn->state != ConnState::connected || payload.size() != kShmOfferSize) {
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p: shm offer ignored\n", static_cast<void *>(conn));
		return;
	}
	char name[kShmNameSize];
	memcpy(name, payload.data(), kShmNameSize);
	memcpy(conn->shm_secret, payload.data() + kShmNameSize, kShmSecretSize);
	// The listener's name carries the pid shm picked it with: the process holding the far
	// end of our core connection must be that one (a kernel fact), or the offer names
	// someone else's listener.
	uint32_t pid = shm_name_pid(name, sizeof(name));
	int ret = pid ? cma_check_connection_owner(conn->core_ep, pid) : -FI_EINVAL;
	if (ret) {
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p: shm offer naming pid %u not proved (%s): it "
					 "stays on the core\n",
			 static_cast<void *>(conn), pid, fi_strerror(-ret));
		set_shm_state(conn, ShmState::declined);
		return;
	}
	ret = open_shm();
	struct fid_ep *ep = nullptr;
	if (!ret)
		ret = open_shm_ep(*shm_, shm_->info, conn, &ep);
	uint8_t cm[kShmCmDataSize];
	put_u32(cm, get_u32(payload.data() + kShmNameSize + kShmSecretSize));
	memcpy(cm + 4, conn->shm_secret, kShmSecretSize);
	if (!ret) {
		ret = fi_connect(ep, name, cm, sizeof(cm));
		if (ret)
			fi_close(&ep->fid);
	}
	if (ret) {
		RXM_INFO(FI_LOG_EP_CTRL, "conn %p: shm connect: %s: it stays on the core\n",
			 static_cast<void *>(conn), fi_strerror(-ret));
		set_shm_state(conn, ShmState::declined);
		return;
	}
	conn->shm_ep = ep;
	set_shm_state(conn, ShmState::connecting);
}

void RxmEndpoint::handle_shm_connreq(const struct fi_eq_cm_entry *entry, size_t data_len)
{
	fi_info *info = entry->info;
	if (!info)
		return;
	RxmConn *conn = nullptr;
	const char *why = nullptr;
	if (data_len != kShmCmDataSize) {
		why = "malformed request";
	} else {
		conn = conn_by_id(get_u32(entry->data));
		if (!conn || conn->state != ConnState::connected ||
		    conn->shm_state != ShmState::offered ||
		    memcmp(entry->data + 4, conn->shm_secret, kShmSecretSize) != 0) {
			conn = nullptr;
			why = "no offer of ours";
		}
	}
	int ret = 0;
	if (conn) {
		// shm took the requester's pid from SO_PEERCRED: it must hold the far end of the
		// very core connection the offer went out on.
		uint32_t pid = info->dest_addr ? shm_name_pid(static_cast<const char *>(info->dest_addr),
							      info->dest_addrlen)
					       : 0;
		ret = pid ? cma_check_connection_owner(conn->core_ep, pid) : -FI_EINVAL;
		if (ret)
			why = "requester does not hold the far end of the core connection";
	}
	struct fid_ep *ep = nullptr;
	if (conn && !ret) {
		ret = open_shm_ep(*shm_, info, conn, &ep);
		if (!ret) {
			ret = fi_accept(ep, nullptr, 0);
			if (ret)
				fi_close(&ep->fid);
		}
		if (ret)
			why = "accepting failed";
	}
	if (why) {
		RXM_INFO(FI_LOG_EP_CTRL, "shm request refused: %s\n", why);
		fi_reject(shm_->pep, info->handle, nullptr, 0);
		if (conn)
			shm_failed(conn, ret ? ret : -FI_EPERM, why);
	} else {
		conn->shm_ep = ep;
		set_shm_state(conn, ShmState::accepting);
	}
	fi_freeinfo(info);
}

void RxmEndpoint::shm_up(RxmConn *conn)
{
	if (conn->state == ConnState::closed)
		return;
	ShmState was = conn->shm_state;
	if (was != ShmState::connecting && was != ShmState::accepting)
		return;
	if (was == ShmState::connecting && shm_->peer_ops) {
		// The offer's listener name only claimed its pid: the kernel's, from the shm
		// socket, must hold the far end of our core connection too, before we move.
		pid_t pid = 0;
		int ret = shm_->peer_ops->peer_pid(conn->shm_ep, &pid);
		if (!ret)
			ret = cma_check_connection_owner(conn->core_ep, static_cast<uint32_t>(pid));
		if (ret) {
			shm_failed(conn, ret, "shm listener does not hold the far end of the core "
					      "connection");
			return;
		}
	}
	set_shm_state(conn, ShmState::connected);
	// The connector moves first; the acceptor once the connector's marker said it moved
	// (so a connector that found fault with the shm connection can still back out).
	if (was == ShmState::connecting) {
		shm_commit(conn);
	} else if (conn->peer_moved) {
		post_shm_rx(conn);
		shm_commit(conn);
	}
}

void RxmEndpoint::shm_commit(RxmConn *conn)
{
	if (conn->shm_moved_queued || conn->state == ConnState::closed)
		return;
	if (!send_control(conn, WireOp::shm_moved, 0)) {
		shm_failed(conn, -FI_EAGAIN, "no room for the shm_moved marker");
		return;
	}
	conn->shm_moved_queued = true;
}

void RxmEndpoint::quiet_core_if_moved(RxmConn *conn)
{
	// Both directions left the core: the connection now only carries liveness (RMA and
	// rendezvous transfers issued before the move may still finish there: the core watches
	// what it has outstanding), so a busy poller need not ask the kernel about its socket on
	// every pass.
	if (conn->tx_on_shm && conn->peer_moved) {
		core_eps_changed_++; // maybe every core connection is quiet now (core_quiet)
		if (conn->core_ep && domain_->quiet())
			domain_->quiet()->set_quiet(conn->core_ep, 1);
	}
}

bool RxmEndpoint::every_core_conn_moved() const
{
	for (const auto &c : conns_)
		if (c && c->core_ep && !(c->tx_on_shm && c->peer_moved))
			return false;
	return true;
}

void RxmEndpoint::handle_shm_moved(RxmConn *conn)
{
	if (conn->peer_moved) {
		RXM_WARN(FI_LOG_EP_DATA, "conn %p: second shm_moved marker\n",
			 static_cast<void *>(conn));
		fail_conn(conn, -FI_EIO);
		return;
	}
	conn->peer_moved = true;
	quiet_core_if_moved(conn);
	switch (conn->shm_state) {
	case ShmState::connected:
		// Nothing more comes from the peer on the core: its messages on shm may be read.
		post_shm_rx(conn);
		shm_commit(conn);
		break;
	case ShmState::accepting:
		break; // shm_up finishes once our shm endpoint reports FI_CONNECTED
	default:
		RXM_WARN(FI_LOG_EP_DATA, "conn %p: peer moved to shm, which we have not (%s)\n",
			 static_cast<void *>(conn), state_name(conn->shm_state));
		fail_conn(conn, -FI_EIO);
		break;
	}
}

} // namespace rxm
