#include "prov/tcp/tcp_passive_endpoint.h"

#include "prov/tcp/tcp_interfaces.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/tcp/tcp_socket.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"

#include <rdma/fi_cm.h>

#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace tcp {

TcpPassiveEndpoint::TcpPassiveEndpoint(TcpFabric &fabric, const struct fi_info *info,
				       void *context)
    : util::PassiveEndpoint(fabric, info, context)
{
	if (info->src_addr) {
		size_t len = sockaddr_length(static_cast<const sockaddr *>(info->src_addr));
		if (len == 0 || info->src_addrlen < len)
			throw util::Error(-FI_EINVAL);
		memcpy(&addr_, info->src_addr, len);
	} else {
		auto *in = reinterpret_cast<sockaddr_in *>(&addr_);
		in->sin_family = info->addr_format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_INET;
	}
	install_ops<TcpPassiveEndpoint>();
}

TcpPassiveEndpoint::~TcpPassiveEndpoint()
{
	util::LockGuard guard(fabric().engine().lock());
	for (Incoming &in : reading_) {
		if (in.registered)
			fabric().engine().remove_fd(in.fd);
		::close(in.fd);
	}
	if (listen_fd_ >= 0) {
		fabric().engine().remove_fd(listen_fd_);
		::close(listen_fd_);
	}
	if (timer_fd_ >= 0) {
		fabric().engine().remove_fd(timer_fd_);
		::close(timer_fd_);
	}
	// Requests reported but not consumed: their connectors are rejected (they learn at once
	// that nobody will answer, rather than wait for a timeout). A request whose FI_CONNREQ
	// is still unread goes with the event (dropped in close()); one the application read
	// stays, as it may still pass the handle: fi_endpoint then fails cleanly on the closed
	// socket, fi_reject frees it.
	for (ConnRequest *r : delivered_) {
		int fd = r->take_fd();
		if (fd >= 0) {
			send_cm_message(fd, CmType::reject, nullptr, 0);
			::close(fd);
		}
		r->set_owner(nullptr);
		if (std::find(unread_.begin(), unread_.end(), r) != unread_.end())
			delete r;
	}
}

void TcpPassiveEndpoint::forget(ConnRequest *request)
{
	util::LockGuard guard(fabric().engine().lock());
	delivered_.erase(std::remove(delivered_.begin(), delivered_.end(), request),
			 delivered_.end());
	resume_accepting();
}

void TcpPassiveEndpoint::resume_accepting()
{
	if (accept_paused_ && delivered_.size() < kMaxUnconsumedRequests)
		accept_paused_ = false;
	update_listen_polling();
}

void TcpPassiveEndpoint::update_listen_polling()
{
	if (listen_fd_ < 0)
		return;
	uint32_t events = accept_paused_ || resting_for_fds_ ? 0u : uint32_t(EPOLLIN);
	fabric().engine().modify_fd(listen_fd_, events, this);
}

int TcpPassiveEndpoint::close()
{
	if (busy())
		return -FI_EBUSY;
	// Our unread FI_CONNREQ events go, like a closed endpoint's events: read later, their
	// handles would name requests nobody can answer any more. Under the engine lock, so no
	// progress pass reports another one meanwhile.
	{
		util::LockGuard guard(fabric().engine().lock());
		if (eq())
			eq()->discard_events_of(&pep_fid()->fid, [this](struct fi_info *info) {
				auto *request = info->handle
					? util::fid_cast<ConnRequest>(info->handle, FI_CLASS_CONNREQ)
					: nullptr;
				if (request)
					unread_.push_back(request);
			});
	}
	// The destructor unregisters the sockets under the engine lock, so no progress pass
	// can be dispatching to this object while it goes away.
	return util::PassiveEndpoint::close();
}

int TcpPassiveEndpoint::listen()
{
	util::LockGuard guard(fabric().engine().lock());
	if (listen_fd_ >= 0)
		return -FI_EALREADY;
	if (!eq())
		return -FI_ENOEQ;
	auto *sa = reinterpret_cast<sockaddr *>(&addr_);
	int fd = open_stream_socket(sa->sa_family);
	if (fd < 0)
		return fd;
	int on = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	int ret = bind_in_port_range(fd, sa, sockaddr_length(sa));
	if (ret == 0 && ::listen(fd, SOMAXCONN) != 0)
		ret = -errno;
	socklen_t len = sizeof(addr_);
	if (ret == 0 && getsockname(fd, sa, &len) != 0)
		ret = -errno;
	// Handshake deadlines must fire even when nothing else happens (an application asleep
	// in fi_eq_sread): a timer fd in the same engine wakes it.
	int timer = ret == 0 ? timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC) : -1;
	if (ret == 0 && timer < 0)
		ret = -errno;
	if (ret == 0)
		ret = fabric().engine().add_fd(timer, EPOLLIN, this);
	if (ret == 0) {
		ret = fabric().engine().add_fd(fd, EPOLLIN, this);
		if (ret)
			fabric().engine().remove_fd(timer);
	}
	if (ret) {
		FI_WARN(&provider, FI_LOG_EP_CTRL, "cannot listen on %s: %s\n",
			sockaddr_to_string(sa).c_str(), fi_strerror(-ret));
		if (timer >= 0)
			::close(timer);
		::close(fd);
		return ret;
	}
	listen_fd_ = fd;
	timer_fd_ = timer;
	return 0;
}

int TcpPassiveEndpoint::getname(void *addr, size_t *addrlen)
{
	return copy_address_out(addr_, addr, addrlen);
}

int TcpPassiveEndpoint::setname(void *addr, size_t addrlen)
{
	util::LockGuard guard(fabric().engine().lock());
	if (listen_fd_ >= 0)
		return -FI_EOPBADSTATE;
	size_t len = sockaddr_length(static_cast<const sockaddr *>(addr));
	if (!addr || len == 0 || addrlen < len)
		return -FI_EINVAL;
	memcpy(&addr_, addr, len);
	return 0;
}

int TcpPassiveEndpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT || !optval || !optlen)
		return -FI_EINVAL;
	if (optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (*optlen < sizeof(size_t)) {
		*optlen = sizeof(size_t);
		return -FI_ETOOSMALL;
	}
	*static_cast<size_t *>(optval) = kMaxCmData;
	*optlen = sizeof(size_t);
	return 0;
}

int TcpPassiveEndpoint::setopt(int level, int, const void *, size_t)
{
	return level == FI_OPT_ENDPOINT ? -FI_ENOPROTOOPT : -FI_EINVAL;
}

int TcpPassiveEndpoint::reject(struct fid *handle, const void *param, size_t paramlen)
{
	if (paramlen > kMaxCmData || (paramlen && !param))
		return -FI_EINVAL;
	util::LockGuard guard(fabric().engine().lock());
	auto *request = util::fid_cast<ConnRequest>(handle, FI_CLASS_CONNREQ);
	if (!request)
		return -FI_EINVAL;
	request->release();
	int ret = request->fd() < 0 ? -FI_ECONNABORTED
				    : send_cm_message(request->fd(), CmType::reject, param, paramlen);
	delete request;
	return ret;
}

void TcpPassiveEndpoint::on_fd_ready(int fd, uint32_t)
{
	if (fd == listen_fd_) {
		accept_connections();
		arm_timer();
		return;
	}
	if (fd == timer_fd_) {
		on_timer();
		return;
	}
	auto it = std::find_if(reading_.begin(), reading_.end(),
			       [fd](const Incoming &in) { return in.fd == fd; });
	if (it != reading_.end() && read_request(static_cast<size_t>(it - reading_.begin())))
		arm_timer();
}

void TcpPassiveEndpoint::accept_connections()
{
	const Settings &limits = settings();
	for (int round = 0; round < kAcceptsPerCall; ++round) {
		if (delivered_.size() >= kMaxUnconsumedRequests) {
			// The application has enough requests to handle; resume_accepting() polls
			// the listening socket again once it consumed some.
			accept_paused_ = true;
			update_listen_polling();
			return;
		}
		IpAddress source{};
		socklen_t source_len = sizeof(source);
		int fd = accept4(listen_fd_, &source.sa, &source_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return;
			if ((errno == EMFILE || errno == ENFILE) && !reading_.empty()) {
				// Our own idle handshakes are the fds to give back: the oldest of
				// the source holding most (it had the longest chance to send its
				// request, and a flooding host cannot push out a lone client).
				int err = errno;
				drop_incoming(busiest_source_oldest(), "out of file descriptors");
				if (accept_warning_.due(monotonic_ms()))
					FI_WARN(&provider, FI_LOG_EP_CTRL,
						"accept failed: %s; closed the oldest pending "
						"handshake (%lu similar failures not logged)\n",
						strerror(err),
						(unsigned long)accept_warning_.take_suppressed());
				continue;
			}
			on_accept_failure(errno);
			return;
		}
		apply_socket_options(fd);
		make_room_for(source);
		uint64_t deadline = monotonic_ms() + uint64_t(limits.cm_request_timeout_ms);
		reading_.push_back(Incoming{fd, false, nullptr, source, deadline});
		size_t index = reading_.size() - 1;
		// The request usually came with the connection: no registration needed then.
		if (read_request(index))
			continue;
		if (fabric().engine().add_fd(fd, EPOLLIN, this) != 0) {
			::close(fd);
			reading_.pop_back();
			continue;
		}
		reading_[index].registered = true;
	}
}

void TcpPassiveEndpoint::on_accept_failure(int err)
{
	// Nothing of ours to free (fds or memory are short elsewhere): the connection stays in
	// the kernel's queue, and the listening socket, readable all the while, rests instead of
	// waking every pass.
	if (accept_warning_.due(monotonic_ms()))
		FI_WARN(&provider, FI_LOG_EP_CTRL,
			"accept failed: %s; retrying in %lu ms (%lu similar failures not logged)\n",
			strerror(err), (unsigned long)kAcceptRetryMs,
			(unsigned long)accept_warning_.take_suppressed());
	resting_for_fds_ = true;
	retry_at_ms_ = monotonic_ms() + kAcceptRetryMs;
	update_listen_polling();
}

void TcpPassiveEndpoint::make_room_for(const IpAddress &source)
{
	const Settings &limits = settings();
	size_t from_source = 0;
	size_t oldest_of_source = reading_.size();
	for (size_t i = 0; i < reading_.size(); ++i)
		if (same_source_host(reading_[i].source, source)) {
			if (from_source++ == 0)
				oldest_of_source = i;
		}
	if (from_source >= limits.max_pending_conn_per_ip) {
		drop_incoming(oldest_of_source, "too many pending handshakes from its address");
		return;
	}
	if (reading_.size() < limits.max_pending_conn)
		return;
	drop_incoming(busiest_source_oldest(), "too many pending handshakes");
}

size_t TcpPassiveEndpoint::busiest_source_oldest() const
{
	// The source holding most pays, so many hosts cannot be pushed out by one.
	size_t victim = 0, victim_count = 0;
	for (size_t i = 0; i < reading_.size(); ++i) {
		size_t count = 0;
		for (const Incoming &other : reading_)
			count += same_source_host(other.source, reading_[i].source);
		if (count > victim_count) {
			victim = i;
			victim_count = count;
		}
	}
	return victim;
}

void TcpPassiveEndpoint::drop_incoming(size_t index, const char *why)
{
	Incoming &in = reading_[index];
	FI_INFO(&provider, FI_LOG_EP_CTRL, "closing an incoming connection: %s\n", why);
	if (in.registered)
		fabric().engine().remove_fd(in.fd);
	::close(in.fd);
	reading_.erase(reading_.begin() + static_cast<std::ptrdiff_t>(index));
}

void TcpPassiveEndpoint::expire_handshakes(uint64_t now_ms)
{
	// Deadlines grow with the accept order, so the expired ones are at the front.
	while (!reading_.empty() && reading_.front().deadline_ms <= now_ms)
		drop_incoming(0, "no connection request within FI_TCP_CM_REQUEST_TIMEOUT");
}

void TcpPassiveEndpoint::on_timer()
{
	uint64_t expirations;
	while (read(timer_fd_, &expirations, sizeof(expirations)) > 0) {
	}
	uint64_t now = monotonic_ms();
	expire_handshakes(now);
	if (resting_for_fds_ && now >= retry_at_ms_) {
		resting_for_fds_ = false;
		update_listen_polling();
	}
	arm_timer();
}

void TcpPassiveEndpoint::arm_timer()
{
	if (timer_fd_ < 0)
		return;
	uint64_t next = 0;
	if (!reading_.empty())
		next = reading_.front().deadline_ms;
	if (resting_for_fds_ && (next == 0 || retry_at_ms_ < next))
		next = retry_at_ms_;
	itimerspec spec{};
	if (next) {
		uint64_t now = monotonic_ms();
		// A deadline already passed still needs a non-zero value (zero disarms).
		uint64_t wait_ms = next > now ? next - now : 1;
		spec.it_value.tv_sec = time_t(wait_ms / 1000);
		spec.it_value.tv_nsec = long(wait_ms % 1000) * 1000000;
	}
	timerfd_settime(timer_fd_, 0, &spec, nullptr);
}

bool TcpPassiveEndpoint::read_request(size_t index)
{
	Incoming &in = reading_[index];
	CmReader first_part;
	CmReader *reader = in.partial ? in.partial.get() : &first_part;
	int ret = reader->read_from(in.fd);
	if (ret == 0) {
		if (!in.partial && reader->started()) {
			in.partial.reset(new (std::nothrow) CmReader(first_part));
			if (!in.partial)
				ret = -FI_ENOMEM;
		}
		if (ret == 0)
			return false;
	}
	int fd = in.fd;
	if (in.registered)
		fabric().engine().remove_fd(fd);
	std::unique_ptr<CmReader> partial = std::move(in.partial); // keeps *reader alive
	reading_.erase(reading_.begin() + static_cast<std::ptrdiff_t>(index));
	if (ret < 0 || reader->type() != CmType::request) {
		FI_INFO(&provider, FI_LOG_EP_CTRL, "dropping an incoming connection: %s\n",
			ret < 0 ? fi_strerror(-ret) : "not a connection request");
		::close(fd);
		return true;
	}
	if (!key_accepted(*reader)) {
		// Refused before anything else happens: no FI_CONNREQ, no data; the connector
		// hears a plain reject.
		FI_INFO(&provider, FI_LOG_EP_CTRL,
			"refusing a connection request that presents another authorization key\n");
		send_cm_message(fd, CmType::reject, nullptr, 0);
		::close(fd);
		return true;
	}
	if (report_request(fd, *reader) != 0)
		::close(fd);
	return true;
}

bool TcpPassiveEndpoint::key_accepted(const CmReader &request)
{
	// The listener's key: its info's ep_attr key, else its domain_attr key (fi_endpoint(3),
	// fi_domain(3)); none means requests must present none.
	const fi_info *mine = info();
	const uint8_t *key = nullptr;
	size_t len = 0;
	if (mine->ep_attr && mine->ep_attr->auth_key_size) {
		key = mine->ep_attr->auth_key;
		len = mine->ep_attr->auth_key_size;
	} else if (mine->domain_attr && mine->domain_attr->auth_key_size) {
		key = mine->domain_attr->auth_key;
		len = mine->domain_attr->auth_key_size;
	}
	if (!key)
		len = 0;
	return auth_keys_match(request.key(), request.key_len(), key, len);
}

int TcpPassiveEndpoint::report_request(int fd, const CmReader &reader)
{
	IpAddress peer{};
	socklen_t peer_len = sizeof(peer);
	if (getpeername(fd, &peer.sa, &peer_len) != 0 || peer_len > sizeof(peer)) {
		FI_INFO(&provider, FI_LOG_EP_CTRL, "dropping an incoming connection: %s\n",
			strerror(errno));
		return -FI_ECONNABORTED;
	}
	sockaddr_storage local{};
	socklen_t local_len = sizeof(local);
	getsockname(fd, reinterpret_cast<sockaddr *>(&local), &local_len);
	fi_info *info = fi_dupinfo(this->info());
	if (!info)
		return -FI_ENOMEM;
	free(info->dest_addr);
	free(info->src_addr);
	info->dest_addr = malloc(peer_len);
	info->src_addr = malloc(local_len);
	info->dest_addrlen = info->src_addrlen = 0;
	if (!info->dest_addr || !info->src_addr) {
		fi_freeinfo(info);
		return -FI_ENOMEM;
	}
	memcpy(info->dest_addr, &peer, peer_len);
	info->dest_addrlen = peer_len;
	memcpy(info->src_addr, &local, local_len);
	info->src_addrlen = local_len;
	info->addr_format = peer.sa.sa_family == AF_INET6 ? FI_SOCKADDR_IN6 : FI_SOCKADDR_IN;
	auto *request = new (std::nothrow) ConnRequest(fd, peer);
	if (!request) {
		fi_freeinfo(info);
		return -FI_ENOMEM;
	}
	info->handle = request->handle();
	// Tracked before the event is visible, so a fast consumer finds it here.
	request->set_owner(this);
	delivered_.push_back(request);
	// write_cm owns `info` from here on, also when it fails.
	int ret = eq()->write_cm(FI_CONNREQ, &pep_fid()->fid, info, reader.data(),
				 reader.data_len());
	if (ret) {
		request->release();
		request->take_fd(); // the caller closes it
		delete request;
		FI_WARN(&provider, FI_LOG_EP_CTRL, "cannot report connection request: %s\n",
			fi_strerror(-ret));
	}
	return ret;
}

} // namespace tcp
