// TcpEndpoint: connection management (fi_connect, fi_accept, fi_shutdown, names).
#include "prov/tcp/tcp_endpoint.h"

#include "prov/tcp/tcp_interfaces.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/tcp/tcp_socket.h"
#include "prov/util/event_queue.h"

#include <rdma/fi_cm.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tcp {
namespace {

// Errors of a connect attempt that belong in the EQ (the peer's answer), not in the return
// value of fi_connect (a bad argument).
bool is_peer_error(int err)
{
	return err == ECONNREFUSED || err == ENETUNREACH || err == EHOSTUNREACH ||
	       err == ETIMEDOUT || err == ECONNRESET || err == EHOSTDOWN || err == ENETDOWN;
}

// How often a connector whose TCP connection the listener accepted and then closed without
// an answer connects again (retry_connect).
constexpr unsigned kConnectRetries = 8;

} // namespace

int TcpEndpoint::getname(void *addr, size_t *addrlen)
{
	util::LockGuard guard(domain().lock());
	int fd = state_ == State::connected ? conn_.fd() : cm_fd_;
	if (fd >= 0) {
		sockaddr_storage bound{};
		socklen_t len = sizeof(bound);
		if (getsockname(fd, reinterpret_cast<sockaddr *>(&bound), &len) == 0)
			return copy_address_out(bound, addr, addrlen);
	}
	if (!have_local_)
		return -FI_EADDRNOTAVAIL;
	return copy_address_out(local_, addr, addrlen);
}

int TcpEndpoint::setname(void *addr, size_t addrlen)
{
	util::LockGuard guard(domain().lock());
	if (state_ != State::idle || from_request_)
		return -FI_EOPBADSTATE;
	size_t need = sockaddr_length(static_cast<const sockaddr *>(addr));
	if (!addr || need == 0 || addrlen < need || need > sizeof(local_))
		return -FI_EINVAL;
	memcpy(&local_, addr, need);
	have_local_ = true;
	return 0;
}

int TcpEndpoint::getpeer(void *addr, size_t *addrlen)
{
	util::LockGuard guard(domain().lock());
	if (!have_peer_ || state_ == State::idle)
		return -FI_ENOTCONN;
	return copy_address_out(peer_, addr, addrlen);
}

int TcpEndpoint::start_connect(int *fd_out)
{
	int fd = open_stream_socket(peer_.sa.sa_family);
	if (fd < 0)
		return fd;
	auto *local = reinterpret_cast<sockaddr *>(&local_);
	if (binds_local()) {
		int ret = bind_in_port_range(fd, local, sockaddr_length(local));
		if (ret) {
			::close(fd);
			return ret;
		}
	}
	if (::connect(fd, reinterpret_cast<const sockaddr *>(&peer_),
		      sockaddr_length(reinterpret_cast<const sockaddr *>(&peer_))) != 0 &&
	    errno != EINPROGRESS) {
		int err = errno;
		::close(fd);
		return err;
	}
	*fd_out = fd;
	return 0;
}

bool TcpEndpoint::binds_local() const
{
	// A wildcard address with no port and no port range leaves the choice to the kernel.
	auto *local = reinterpret_cast<const sockaddr *>(&local_);
	return have_local_ && local_.sa.sa_family == peer_.sa.sa_family &&
	       (!is_wildcard_ip(local) || sockaddr_port(local) != 0 || settings().port_low != 0);
}

int TcpEndpoint::connect(const void *addr, const void *param, size_t paramlen)
{
	util::LockGuard guard(domain().lock());
	if (state_ != State::idle || from_request_)
		return -FI_EOPBADSTATE;
	if (!eq())
		return -FI_ENOEQ;
	if (paramlen > kMaxCmData || (paramlen && !param))
		return -FI_EINVAL;
	const sockaddr *dest = static_cast<const sockaddr *>(addr);
	if (!dest && have_peer_)
		dest = reinterpret_cast<const sockaddr *>(&peer_);
	socklen_t dest_len = sockaddr_length(dest);
	if (dest_len == 0 || dest_len > sizeof(peer_) || sockaddr_port(dest) == 0)
		return -FI_EINVAL;
	memmove(&peer_, dest, dest_len);
	have_peer_ = true;

	int fd = -1;
	int ret = start_connect(&fd);
	if (ret < 0)
		return ret;
	connecting_ = std::make_unique<ConnectState>();
	if (paramlen)
		memcpy(connecting_->request, param, paramlen);
	connecting_->request_len = paramlen;
	if (ret > 0) {
		if (!is_peer_error(ret))
			return -ret;
		state_ = State::connecting;
		connect_failed(ret, nullptr, 0);
		return 0;
	}
	cm_fd_ = fd;
	state_ = State::connecting;
	update_registration();
	return 0;
}

void TcpEndpoint::progress_connect()
{
	int err = 0;
	socklen_t len = sizeof(err);
	if (getsockopt(cm_fd_, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
		err = errno;
	// ECONNRESET here (not ECONNREFUSED): the handshake completed and the listener closed.
	if (err == ECONNRESET && retry_connect())
		return;
	if (err) {
		connect_failed(err, nullptr, 0);
		return;
	}
	const std::vector<uint8_t> &key = auth_key();
	int ret = send_cm_request(cm_fd_, key.data(), key.size(), connecting_->request,
				  connecting_->request_len);
	if ((ret == -FI_ECONNRESET || ret == -EPIPE) && retry_connect())
		return;
	if (ret) {
		connect_failed(-ret, nullptr, 0);
		return;
	}
	state_ = State::awaiting_reply;
}

bool TcpEndpoint::retry_connect()
{
	// A listener under a connection storm closes the oldest unanswered handshakes of one
	// address (FI_TCP_MAX_PENDING_CONN_PER_IP), e.g. of a process that opened many
	// endpoints and connected them all before its first progress call. That listener is
	// alive and nothing was said yet: connect again (the request now follows at once)
	// instead of failing the application's connection. Bounded: a listener that keeps
	// dropping us (or a peer that accepts and closes on purpose) ends in FI_ECONNREFUSED.
	if (!connecting_ || connecting_->retries >= kConnectRetries)
		return false;
	int fd = -1;
	if (start_connect(&fd) != 0) // e.g. the old connection still holds a fixed port
		return false;
	FI_INFO(&provider, FI_LOG_EP_CTRL,
		"listener %s closed our connection unanswered; connecting again (%u)\n",
		sockaddr_to_string(reinterpret_cast<const sockaddr *>(&peer_)).c_str(),
		connecting_->retries + 1);
	unregister();
	::close(cm_fd_);
	cm_fd_ = fd;
	connecting_->reply = CmReader{};
	connecting_->retries++;
	state_ = State::connecting;
	update_registration();
	return true;
}

void TcpEndpoint::progress_reply()
{
	CmReader &reply = connecting_->reply;
	int ret = reply.read_from(cm_fd_);
	if (ret == 0)
		return;
	if (ret < 0) {
		// The listener closed without answering: dropped under load (connect again) or
		// gone (refused).
		if (ret == -FI_ECONNRESET && !reply.started() && retry_connect())
			return;
		connect_failed(ret == -FI_ECONNRESET ? FI_ECONNREFUSED : -ret, nullptr, 0);
		return;
	}
	switch (reply.type()) {
	case CmType::accept: {
		int fd = cm_fd_;
		cm_fd_ = -1;
		if (eq())
			eq()->write_cm(FI_CONNECTED, &ep_fid()->fid, nullptr, reply.data(),
				       reply.data_len());
		connecting_.reset();
		become_connected(fd);
		return;
	}
	case CmType::reject:
		connect_failed(FI_ECONNREFUSED, reply.data(), reply.data_len());
		connecting_.reset();
		return;
	case CmType::request:
	case CmType::auth_request:
		break;
	}
	FI_WARN(&provider, FI_LOG_EP_CTRL, "peer answered a connect with a request\n");
	connect_failed(FI_ECONNABORTED, nullptr, 0);
}

void TcpEndpoint::connect_failed(int err, const void *data, size_t len)
{
	FI_INFO(&provider, FI_LOG_EP_CTRL, "connect to %s failed: %s\n",
		sockaddr_to_string(reinterpret_cast<const sockaddr *>(&peer_)).c_str(),
		fi_strerror(err));
	unregister();
	if (cm_fd_ >= 0)
		::close(cm_fd_);
	cm_fd_ = -1;
	state_ = State::closed;
	conn_.stop();
	if (eq())
		eq()->write_error(&ep_fid()->fid, ep_fid()->fid.context, 0, err, err, data, len);
}

void TcpEndpoint::become_connected(int fd)
{
	state_ = State::connected;
	conn_.attach(fd);
	update_registration();
}

int TcpEndpoint::accept(const void *param, size_t paramlen)
{
	util::LockGuard guard(domain().lock());
	if (!from_request_ || state_ != State::idle || cm_fd_ < 0)
		return -FI_EOPBADSTATE;
	if (!eq())
		return -FI_ENOEQ;
	if (paramlen > kMaxCmData || (paramlen && !param))
		return -FI_EINVAL;
	int ret = send_cm_message(cm_fd_, CmType::accept, param, paramlen);
	if (ret)
		return ret;
	int fd = cm_fd_;
	cm_fd_ = -1;
	eq()->write_cm(FI_CONNECTED, &ep_fid()->fid, nullptr, nullptr, 0);
	become_connected(fd);
	return 0;
}

int TcpEndpoint::shutdown(uint64_t)
{
	util::LockGuard guard(domain().lock());
	switch (state_) {
	case State::connected:
		// Sends held back for the next pass go out first, as they would have at the post.
		tcp_domain().send_flush().remove(this);
		conn_.progress_tx();
		unregister();
		conn_.stop();
		break;
	case State::connecting:
	case State::awaiting_reply:
		unregister();
		::close(cm_fd_);
		cm_fd_ = -1;
		conn_.stop();
		break;
	case State::idle:
		if (!from_request_)
			return -FI_ENOTCONN;
		conn_.stop(); // receives posted before fi_accept come back cancelled
		break;
	case State::closed:
		return 0;
	}
	bool had_connection = state_ != State::idle;
	state_ = State::closed;
	// The caller hears of its own disconnect too (as from upstream's providers): a program
	// that shuts down and then waits for FI_SHUTDOWN on its EQ must not wait forever. The
	// cancelled completions were written above, before the event.
	if (had_connection && eq())
		eq()->write_cm(FI_SHUTDOWN, &ep_fid()->fid, nullptr, nullptr, 0);
	return 0;
}

} // namespace tcp
