// Endpoint connection management over rdma_cm. The active side resolves address and route
// asynchronously (the EQ drives it), creates its QP once the route names the device, and
// connects; the passive side accepts on the id taken from the connection request.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "prov/verbs/verbs_cm_data.h"
#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/verbs/verbs_pep.h"
#include "prov/verbs/verbs_provider.h"

namespace verbs {
namespace {

constexpr int kResolveTimeoutMs = 2000;
// Retries of transport errors; those of receiver-not-ready NAKs are FI_VERBS_RNR_RETRY.
constexpr uint8_t kRetryCount = 7;
// How long the answer to a peer's disconnect waits for our sends in flight (on_cm_event).
// An acknowledgement that was sent arrives within milliseconds even under emulation; one
// that was never sent will not come, and those sends are flushed when this passes.
constexpr auto kPeerDisconnectGrace = std::chrono::seconds(1);
// How long closing a connected endpoint keeps its QP working for the peer's answer to the
// disconnect request (linger_until_peer_answers): long enough for an acknowledgement our
// QP still owes to get out, short because a peer that does not read its EQ (busy, or
// closing its connections one by one) costs the whole of it per connection.
constexpr auto kCloseLinger = std::chrono::milliseconds(500);

size_t sockaddr_size(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

} // namespace

int VerbsEndpoint::setname(void *addr, size_t addrlen)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (id_ || !addr || addrlen < sizeof(struct sockaddr_in))
		return id_ ? -FI_EOPBADSTATE : -FI_EINVAL;
	auto *sa = static_cast<struct sockaddr *>(addr);
	if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) || addrlen < sockaddr_size(sa))
		return -FI_EINVAL;
	void *copy = std::malloc(sockaddr_size(sa));
	if (!copy)
		return -FI_ENOMEM;
	std::memcpy(copy, sa, sockaddr_size(sa));
	std::free(info_->src_addr);
	info_->src_addr = copy;
	info_->src_addrlen = sockaddr_size(sa);
	return 0;
}

int VerbsEndpoint::getname(void *addr, size_t *addrlen)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (id_ && id_->verbs)
		return copy_out_address(rdma_get_local_addr(id_), addr, addrlen);
	if (!info_->src_addr)
		return -FI_EADDRNOTAVAIL;
	return copy_out_address(static_cast<const struct sockaddr *>(info_->src_addr), addr, addrlen);
}

int VerbsEndpoint::getpeer(void *addr, size_t *addrlen)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (!id_ || (state_ != State::Connected && state_ != State::Accepting))
		return -FI_ENOTCONN;
	return copy_out_address(rdma_get_peer_addr(id_), addr, addrlen);
}

int VerbsEndpoint::connect(const void *addr, const void *param, size_t paramlen)
{
	if (!addr)
		addr = info_->dest_addr;
	if (!addr)
		return -FI_EINVAL;
	struct sockaddr_storage dest {};
	auto *sa = static_cast<const struct sockaddr *>(addr);
	if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
		return -FI_EINVAL;
	std::memcpy(&dest, sa, sockaddr_size(sa));
	auto wire = encode_cm_data(param, paramlen);
	if (!wire)
		return -FI_EINVAL;

	std::lock_guard<std::mutex> guard(lock_);
	if (!eq())
		return -FI_ENOEQ;
	if (state_ != State::Idle || id_)
		return -FI_EOPBADSTATE;
	if (int ret = enable_locked())
		return ret;
	connect_data_ = std::move(*wire);
	if (rdma_create_id(verbs_eq()->channel(), &id_, static_cast<CmEventTarget *>(this), RDMA_PS_TCP))
		return -errno;
	auto *src = static_cast<struct sockaddr *>(info_->src_addr);
	if (rdma_resolve_addr(id_, src, reinterpret_cast<struct sockaddr *>(&dest), kResolveTimeoutMs)) {
		int err = errno;
		VERBS_WARN(FI_LOG_EP_CTRL, "rdma_resolve_addr failed: %s\n", strerror(err));
		rdma_destroy_id(id_);
		id_ = nullptr;
		return err ? -err : -FI_EOTHER;
	}
	state_ = State::Resolving;
	return 0;
}

int VerbsEndpoint::accept(const void *param, size_t paramlen)
{
	auto wire = encode_cm_data(param, paramlen);
	if (!wire)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> guard(lock_);
	if (!id_ || state_ != State::Idle)
		return -FI_EOPBADSTATE;
	if (!eq())
		return -FI_ENOEQ;
	if (int ret = enable_locked())
		return ret;
	const struct ibv_device_attr &dev = verbs_domain().device_attr();
	struct rdma_conn_param conn {};
	conn.private_data = wire->data();
	conn.private_data_len = static_cast<uint8_t>(wire->size());
	conn.responder_resources = static_cast<uint8_t>(
		std::min<int>(connreq_initiator_depth_, dev.max_qp_rd_atom));
	conn.initiator_depth = static_cast<uint8_t>(
		std::min<int>(connreq_responder_resources_, dev.max_qp_init_rd_atom));
	conn.retry_count = kRetryCount;
	conn.rnr_retry_count = static_cast<uint8_t>(params().rnr_retry);
	if (rdma_accept(id_, &conn)) {
		int err = errno;
		VERBS_WARN(FI_LOG_EP_CTRL, "rdma_accept failed: %s\n", strerror(err));
		return err ? -err : -FI_EOTHER;
	}
	state_ = State::Accepting;
	return 0;
}

int VerbsEndpoint::shutdown(uint64_t flags)
{
	(void)flags;
	std::lock_guard<std::mutex> guard(lock_);
	State state = state_;
	if (id_ && (state == State::Connected || state == State::Accepting ||
		    state == State::Connecting))
		rdma_disconnect(id_);
	if (state != State::Idle)
		state_ = State::Shutdown;
	return 0;
}

void VerbsEndpoint::fail_connection_locked(VerbsEventQueue &eq, int err, int prov_errno,
					   std::vector<uint8_t> data)
{
	state_ = State::Failed;
	eq.push_error(fid(), err, prov_errno, std::move(data));
}

void VerbsEndpoint::on_route_resolved_locked(VerbsEventQueue &eq)
{
	if (id_->verbs != verbs_domain().context()) {
		VERBS_WARN(FI_LOG_EP_CTRL, "the route leaves through another RDMA device\n");
		fail_connection_locked(eq, FI_EHOSTUNREACH, 0);
		return;
	}
	if (int ret = create_qp_locked()) {
		fail_connection_locked(eq, -ret, 0);
		return;
	}
	const struct ibv_device_attr &dev = verbs_domain().device_attr();
	struct rdma_conn_param conn {};
	conn.private_data = connect_data_.data();
	conn.private_data_len = static_cast<uint8_t>(connect_data_.size());
	conn.responder_resources = static_cast<uint8_t>(std::min(dev.max_qp_rd_atom, 255));
	conn.initiator_depth = static_cast<uint8_t>(std::min(dev.max_qp_init_rd_atom, 255));
	conn.retry_count = kRetryCount;
	conn.rnr_retry_count = static_cast<uint8_t>(params().rnr_retry);
	if (rdma_connect(id_, &conn)) {
		int err = errno;
		VERBS_WARN(FI_LOG_EP_CTRL, "rdma_connect failed: %s\n", strerror(err));
		fail_connection_locked(eq, FI_ECONNREFUSED, err);
		return;
	}
	state_ = State::Connecting;
}

void VerbsEndpoint::answer_peer_disconnect_locked(VerbsEventQueue &eq)
{
	disconnect_deferred_ = false;
	// Answer the peer's disconnect request so neither side waits for a timeout.
	rdma_disconnect(id_);
	if (!shutdown_reported_) {
		shutdown_reported_ = true;
		eq.push_cm_entry(FI_SHUTDOWN, fid(), nullptr, {});
	}
}

bool VerbsEndpoint::settle_deferred(VerbsEventQueue &eq, std::chrono::steady_clock::time_point now)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (closing_ || !disconnect_deferred_)
		return true;
	size_t in_flight = tx_pool_.in_use();
	if (in_flight && now < disconnect_due_)
		return false;
	auto waited = std::chrono::duration_cast<std::chrono::microseconds>(
		now - (disconnect_due_ - kPeerDisconnectGrace));
	if (in_flight)
		VERBS_INFO(FI_LOG_EP_CTRL, "%zu send(s) still unacknowledged %lld us after the peer "
			   "disconnected: they are flushed\n", in_flight,
			   static_cast<long long>(waited.count()));
	else
		VERBS_INFO(FI_LOG_EP_CTRL, "the sends in flight completed %lld us after the peer "
			   "disconnected\n", static_cast<long long>(waited.count()));
	answer_peer_disconnect_locked(eq);
	return true;
}

// Closing a connected endpoint: the disconnect request goes out while our QP still works,
// and the QP is flushed only once the peer answered (or kCloseLinger passed). A QP moved to
// the error state drops the acknowledgement of a message it has just received (rxe builds it
// right after posting the receive completion, which the application may already have read
// and acted on by closing): the peer's send of that message then failed although we had it
// (Debian's fi_pingpong over verbs;ofi_rxm: the client's final send, FI_ECANCELED). The peer
// answers once its sends are acknowledged (on_cm_event, DISCONNECTED).
void VerbsEndpoint::linger_until_peer_answers()
{
	VerbsEventQueue *eq = nullptr;
	{
		std::lock_guard<std::mutex> guard(lock_);
		if (!id_ || !qp_ || !verbs_eq() || state_ != State::Connected)
			return;
		state_ = State::Shutdown;
		eq = verbs_eq();
		// rdma_disconnect moves id->qp to the error state itself: hide our QP from it.
		id_->qp = nullptr;
		int ret = rdma_disconnect(id_);
		id_->qp = qp_;
		if (ret)
			return;
	}
	auto deadline = std::chrono::steady_clock::now() + kCloseLinger;
	while (!peer_answered_ && std::chrono::steady_clock::now() < deadline) {
		eq->progress();
		if (!peer_answered_)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
	}
}

void VerbsEndpoint::on_cm_event(const struct rdma_cm_event &event, VerbsEventQueue &eq)
{
	std::lock_guard<std::mutex> guard(lock_);
	if (closing_) {
		// The peer's answer to the disconnect request of our close (linger_until_peer_answers).
		if (event.event == RDMA_CM_EVENT_DISCONNECTED)
			peer_answered_ = true;
		return;
	}
	const struct rdma_conn_param &conn = event.param.conn;
	switch (event.event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(id_, kResolveTimeoutMs))
			fail_connection_locked(eq, FI_EHOSTUNREACH, errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		on_route_resolved_locked(eq);
		break;
	case RDMA_CM_EVENT_ESTABLISHED: {
		auto data = decode_cm_data(conn.private_data, conn.private_data_len);
		if (!data) {
			VERBS_WARN(FI_LOG_EP_CTRL, "peer sent malformed private data; ignored\n");
			data.emplace();
		}
		// The RNR NAK timer may only be changed once the QP is in RTS (rdma_cm got it there).
		struct ibv_qp_attr attr {};
		attr.min_rnr_timer = static_cast<uint8_t>(params().min_rnr_timer);
		if (qp_ && ibv_modify_qp(qp_, &attr, IBV_QP_MIN_RNR_TIMER))
			VERBS_INFO(FI_LOG_EP_CTRL, "could not set the minimum RNR timer\n");
		state_ = State::Connected;
		eq.push_cm_entry(FI_CONNECTED, fid(), nullptr, *data);
		break;
	}
	case RDMA_CM_EVENT_REJECTED: {
		auto data = decode_cm_data(conn.private_data, conn.private_data_len);
		fail_connection_locked(eq, FI_ECONNREFUSED, event.status,
				       data ? std::move(*data) : std::vector<uint8_t>{});
		break;
	}
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		fail_connection_locked(eq, FI_EHOSTUNREACH, event.status);
		break;
	case RDMA_CM_EVENT_CONNECT_ERROR:
		fail_connection_locked(eq, FI_ECONNREFUSED, event.status);
		break;
	case RDMA_CM_EVENT_DISCONNECTED: {
		// No new sends from here on; those already posted may still be acknowledged.
		state_ = State::Shutdown;
		size_t in_flight = tx_pool_.in_use();
		VERBS_INFO(FI_LOG_EP_CTRL, "peer disconnected with %zu send(s) in flight\n", in_flight);
		// Our answer moves the QP to the error state, which flushes every send not yet
		// acknowledged. A peer closes as soon as it has our last message, and its
		// disconnect request can overtake the acknowledgement of that message (seen on
		// Soft-RoCE under load: fi_pingpong's final send then failed with FI_ECANCELED
		// although the peer had received it). So the answer waits, boundedly, for the
		// sends in flight to complete.
		if (in_flight && !disconnect_deferred_) {
			disconnect_deferred_ = true;
			disconnect_due_ = std::chrono::steady_clock::now() + kPeerDisconnectGrace;
			deferred_eq_ = &eq;
			eq.defer(this);
			break;
		}
		answer_peer_disconnect_locked(eq);
		break;
	}
	default:
		VERBS_INFO(FI_LOG_EP_CTRL, "CM event %s ignored\n", rdma_event_str(event.event));
		break;
	}
}

} // namespace verbs
