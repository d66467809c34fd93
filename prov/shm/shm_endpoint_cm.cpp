// ShmEndpoint: connection management (fi_connect, fi_accept, fi_shutdown, names).
#include "prov/shm/shm_cm.h"
#include "prov/shm/shm_endpoint.h"
#include "prov/shm/shm_membarrier.h"
#include "prov/shm/shm_provider.h"
#include "prov/util/event_queue.h"

#include <rdma/fi_cm.h>

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace shm {

int ShmEndpoint::getname(void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	size_t room = *addrlen;
	*addrlen = kAddrLen;
	if (!addr || room < kAddrLen)
		return -FI_ETOOSMALL;
	memcpy(addr, local_.text, kAddrLen);
	return 0;
}

int ShmEndpoint::getpeer(void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	if (!have_peer_)
		return -FI_ENOTCONN;
	size_t room = *addrlen;
	*addrlen = kAddrLen;
	if (!addr || room < kAddrLen)
		return -FI_ETOOSMALL;
	memcpy(addr, peer_.text, kAddrLen);
	return 0;
}

int ShmEndpoint::connect(const void *addr, const void *param, size_t paramlen)
{
	if (paramlen > kMaxCmData || (paramlen && !param))
		return -FI_EINVAL;
	ShmAddress target;
	if (!parse_address(addr, kAddrLen, &target))
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	if (!enabled())
		return -FI_EOPBADSTATE;
	if (!eq())
		return -FI_ENOEQ;
	if (state_ != State::idle || from_request_)
		return -FI_EOPBADSTATE;
	peer_ = target;
	have_peer_ = true;
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -errno;
	sock_ = sock;
	sockaddr_un name;
	socklen_t len = socket_name(target, &name);
	// Refused, absent or not our user: an EQ error like a refused TCP connect, and nothing
	// of ours (segment, doorbell) ever reaches such a listener.
	if (::connect(sock, reinterpret_cast<sockaddr *>(&name), len) != 0 ||
	    !peer_is_same_user(sock)) {
		connect_failed(FI_ECONNREFUSED, nullptr, 0);
		return 0;
	}
	own_bell_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (own_bell_ < 0) {
		int err = errno;
		release_connection();
		return -err;
	}
	try {
		pending_segment_ = Segment::create();
	} catch (...) {
		release_connection();
		throw;
	}
	declare_sleep_barrier(*pending_segment_, true);
	int fds[2] = {pending_segment_->fd(), own_bell_};
	int ret = send_cm(sock, kCmRequest, param, paramlen, fds, 2);
	pending_segment_->close_fd();
	if (ret) {
		connect_failed(FI_ECONNREFUSED, nullptr, 0);
		return 0;
	}
	ret = domain().engine().add_fd(sock, EPOLLIN, this);
	if (ret) {
		release_connection();
		return ret;
	}
	state_ = State::connecting;
	return 0;
}

void ShmEndpoint::on_reply()
{
	CmMessage msg;
	int ret = recv_cm(sock_, &msg);
	if (ret == 0)
		return;
	if (ret < 0 || msg.type == kCmRequest) {
		msg.close_fds();
		connect_failed(FI_ECONNREFUSED, nullptr, 0);
		return;
	}
	if (msg.type == kCmReject) {
		connect_failed(FI_ECONNREFUSED, msg.data, msg.data_len);
		return;
	}
	if (!check_eventfd(msg.fds[0])) {
		msg.close_fds();
		connect_failed(FI_ECONNREFUSED, nullptr, 0);
		return;
	}
	start_connected(sock_, std::move(pending_segment_), msg.fds[0], true);
	eq()->write_cm(FI_CONNECTED, &ep_fid()->fid, nullptr, msg.data, msg.data_len);
}

void ShmEndpoint::connect_failed(int err, const void *data, size_t len)
{
	release_connection();
	state_ = State::closed;
	cancel_all();
	if (eq())
		eq()->write_error(&ep_fid()->fid, ep_fid()->fid.context, 0, err, -err, data, len);
}

int ShmEndpoint::accept(const void *param, size_t paramlen)
{
	if (paramlen > kMaxCmData || (paramlen && !param))
		return -FI_EINVAL;
	util::LockGuard guard(domain().lock());
	if (!enabled())
		return -FI_EOPBADSTATE;
	if (!eq())
		return -FI_ENOEQ;
	if (!from_request_ || state_ != State::idle || sock_ < 0)
		return -FI_EOPBADSTATE;
	int bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (bell < 0)
		return -errno;
	own_bell_ = bell;
	declare_sleep_barrier(*segment_, false);
	int ret = send_cm(sock_, kCmAccept, param, paramlen, &bell, 1);
	if (ret) {
		connection_lost(ret);
		return ret;
	}
	ret = domain().engine().add_fd(sock_, EPOLLIN, this);
	if (ret) {
		release_connection();
		state_ = State::closed;
		return ret;
	}
	start_connected(sock_, std::move(segment_), peer_bell_, false);
	eq()->write_cm(FI_CONNECTED, &ep_fid()->fid, nullptr, nullptr, 0);
	return 0;
}

void ShmEndpoint::declare_sleep_barrier(Segment &segment, bool connector)
{
	sleeps_with_membarrier_ = settings().membarrier && membarrier_ready();
	segment.layout().sleeps_with_membarrier[connector ? 0 : 1].store(
		sleeps_with_membarrier_ ? 1 : 0, std::memory_order_relaxed);
}

void ShmEndpoint::start_connected(int sock, std::unique_ptr<Segment> segment, int peer_bell,
				  bool connector)
{
	sock_ = sock;
	segment_ = std::move(segment);
	peer_bell_ = peer_bell;
	SegmentLayout &layout = segment_->layout();
	// The peer wrote its word before its handshake message, which we have read. Read once:
	// a peer changing it later changes nothing here.
	RingBarriers barriers;
	barriers.membarrier = sleeps_with_membarrier_ &&
			      layout.sleeps_with_membarrier[connector ? 1 : 0].load(
				      std::memory_order_relaxed) != 0;
	tx_ring_.attach(&layout.rings[connector ? 0 : 1], barriers);
	rx_ring_.attach(&layout.rings[connector ? 1 : 0], barriers);
	state_ = State::connected;
	if (domain().engine().add_fd(own_bell_, EPOLLIN, this) != 0 ||
	    domain().engine().add_source(this) != 0) {
		connection_lost(-FI_ENOMEM);
		return;
	}
	in_engine_ = true;
	// Both fds are lazy: progress() reads the rings on every pass (the doorbell only wakes
	// sleepers), and a hangup may be noticed a little later; a busy pass then makes no
	// system call.
	domain().engine().set_lazy(own_bell_, true);
	domain().engine().set_lazy(sock_, true);
	// Sends posted while connecting, and anything the peer wrote already.
	progress();
}

void ShmEndpoint::on_socket_event()
{
	// After the handshake the peer never sends on the socket: readable means it closed
	// (exit, crash, fi_shutdown, fi_close) or misbehaved. What it put in the ring before
	// is still delivered.
	char byte;
	ssize_t n = ::recv(sock_, &byte, 1, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return;
	if (state_ == State::connected && !drain_rx())
		return; // already failed
	connection_lost(n > 0 ? -FI_EIO : 0);
}

int ShmEndpoint::shutdown(uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	util::LockGuard guard(domain().lock());
	if (state_ == State::closed || (state_ == State::idle && !from_request_))
		return state_ == State::closed ? 0 : -FI_ENOTCONN;
	connection_lost(0);
	return 0;
}

} // namespace shm
