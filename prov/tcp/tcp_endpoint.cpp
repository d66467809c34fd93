// TcpEndpoint: construction, options, progress glue and the Connection's reports.
#include "prov/tcp/tcp_endpoint.h"

#include "prov/tcp/tcp_conn_request.h"
#include "prov/tcp/tcp_interfaces.h"
#include "prov/tcp/tcp_passive_endpoint.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/tcp/tcp_srx.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"

#include <rdma/fi_cm.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace tcp {
namespace {

Limits limits_for(const fi_info *info)
{
	const Settings &s = settings();
	Limits limits;
	limits.tx_size = info->tx_attr && info->tx_attr->size ? info->tx_attr->size : s.tx_size;
	limits.rx_size = info->rx_attr && info->rx_attr->size ? info->rx_attr->size : s.rx_size;
	limits.inject_size = s.max_inject;
	if (info->tx_attr && info->tx_attr->inject_size)
		limits.inject_size = std::min(info->tx_attr->inject_size, s.max_inject);
	// Bound what one endpoint may pin in pools, whatever an application asks for.
	constexpr size_t kMaxQueue = 1 << 16;
	limits.tx_size = std::min(limits.tx_size, kMaxQueue);
	limits.rx_size = std::min(limits.rx_size, kMaxQueue);
	return limits;
}

bool copy_sockaddr(const void *addr, size_t len, IpAddress *out)
{
	size_t need = sockaddr_length(static_cast<const sockaddr *>(addr));
	if (!addr || need == 0 || len < need || need > sizeof(*out))
		return false;
	memcpy(out, addr, need);
	return true;
}

} // namespace

TcpEndpoint::TcpEndpoint(TcpDomain &domain, const struct fi_info *info, void *context)
    : util::Endpoint(domain, info, context), conn_(*this, limits_for(info))
{
	if (info->src_addr)
		have_local_ = copy_sockaddr(info->src_addr, info->src_addrlen, &local_);
	if (info->dest_addr)
		have_peer_ = copy_sockaddr(info->dest_addr, info->dest_addrlen, &peer_);
	if (info->ep_attr && info->ep_attr->auth_key_size) {
		const fi_ep_attr *ea = info->ep_attr;
		if (ea->auth_key_size > kMaxAuthKey || !ea->auth_key)
			throw util::Error(-FI_EINVAL);
		own_auth_key_ = std::make_unique<std::vector<uint8_t>>(
			ea->auth_key, ea->auth_key + ea->auth_key_size);
	}
	if (info->handle && info->handle->fclass == FI_CLASS_PEP) {
		// An info made from a passive endpoint (hints->handle): this endpoint takes over
		// the address the application gave that passive endpoint.
		auto *pep = util::fid_cast<TcpPassiveEndpoint>(info->handle, FI_CLASS_PEP);
		if (!pep)
			throw util::Error(-FI_EINVAL);
		size_t len = sizeof(local_);
		have_local_ = pep->getname(&local_, &len) == 0;
	} else if (info->handle) {
		auto *request = util::fid_cast<ConnRequest>(info->handle, FI_CLASS_CONNREQ);
		if (!request)
			throw util::Error(-FI_EINVAL);
		request->release();
		cm_fd_ = request->take_fd();
		if (cm_fd_ < 0) {
			// Its listener was closed meanwhile.
			delete request;
			throw util::Error(-FI_ECONNABORTED);
		}
		have_peer_ = copy_sockaddr(&request->peer(), sizeof(request->peer()), &peer_);
		from_request_ = true;
		delete request;
	}
	conn_.set_min_multi_recv(min_multi_recv());
	install_ops<TcpEndpoint>();
}

const std::vector<uint8_t> &TcpEndpoint::auth_key()
{
	return own_auth_key_ ? *own_auth_key_ : tcp_domain().auth_key();
}

TcpEndpoint::~TcpEndpoint()
{
	{
		util::LockGuard guard(domain().lock());
		tcp_domain().send_flush().remove(this);
		tcp_domain().stall_watch().remove(this);
	}
	unregister();
	if (cm_fd_ >= 0)
		::close(cm_fd_);
}

int TcpEndpoint::close()
{
	if (busy())
		return -FI_EBUSY;
	{
		util::LockGuard guard(domain().lock());
		// Sends held back for the next pass were posted before the close: they leave
		// now if the socket takes them, as they would have at the post.
		tcp_domain().send_flush().remove(this);
		tcp_domain().stall_watch().remove(this);
		if (state_ == State::connected)
			conn_.progress_tx();
		unregister();
		state_ = State::closed;
		if (srx_) {
			srx_->forget(this);
			conn_.use_shared_rx(nullptr); // a receive being filled goes back first
			srx_->unref();
			srx_ = nullptr;
		}
		// fi_endpoint: operations outstanding at close are discarded silently. Its EQ
		// events go too: read later, they would name a closed fid (whose memory a new
		// endpoint may have by then).
		if (eq())
			eq()->discard_events_of(&ep_fid()->fid);
	}
	return util::Endpoint::close();
}

int TcpEndpoint::bind(struct fid *bfid, uint64_t flags)
{
	if (!bfid || bfid->fclass != FI_CLASS_SRX_CTX)
		return util::Endpoint::bind(bfid, flags);
	auto *srx = util::fid_cast<TcpSrx>(bfid, FI_CLASS_SRX_CTX);
	if (!srx || &srx->domain() != &tcp_domain())
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	util::LockGuard guard(domain().lock());
	if (enabled() || srx_)
		return -FI_EOPBADSTATE;
	srx_ = srx;
	srx_->ref();
	conn_.use_shared_rx(&srx_->queue());
	return 0;
}

void TcpEndpoint::rx_starved()
{
	if (srx_)
		srx_->starved(this);
}

void TcpEndpoint::resume_rx()
{
	if (state_ != State::connected)
		return;
	conn_.progress_rx();
	update_registration();
}

int TcpEndpoint::hold_rx(bool held)
{
	util::LockGuard guard(domain().lock());
	conn_.hold_messages(held);
	if (!held)
		resume_rx();
	return 0;
}

int TcpEndpoint::enable()
{
	return util::Endpoint::enable();
}

int TcpEndpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	if (level == FI_OPT_ENDPOINT && optname == FI_OPT_CM_DATA_SIZE) {
		if (!optval || !optlen)
			return -FI_EINVAL;
		if (*optlen < sizeof(size_t)) {
			*optlen = sizeof(size_t);
			return -FI_ETOOSMALL;
		}
		*static_cast<size_t *>(optval) = kMaxCmData;
		*optlen = sizeof(size_t);
		return 0;
	}
	return util::Endpoint::getopt(level, optname, optval, optlen);
}

int TcpEndpoint::setopt(int level, int optname, const void *optval, size_t optlen)
{
	int ret = util::Endpoint::setopt(level, optname, optval, optlen);
	if (ret == 0) {
		util::LockGuard guard(domain().lock());
		conn_.set_min_multi_recv(min_multi_recv());
	}
	return ret;
}

ssize_t TcpEndpoint::cancel(void *context)
{
	util::LockGuard guard(domain().lock());
	return conn_.cancel_recv(context);
}

ssize_t TcpEndpoint::rx_size_left()
{
	util::LockGuard guard(domain().lock());
	return static_cast<ssize_t>(conn_.rx_free());
}

ssize_t TcpEndpoint::tx_size_left()
{
	util::LockGuard guard(domain().lock());
	return static_cast<ssize_t>(conn_.tx_free());
}

void TcpEndpoint::unregister()
{
	if (registered_fd_ >= 0)
		domain().engine().remove_fd(registered_fd_);
	registered_fd_ = -1;
	registered_events_ = 0;
	registered_lazy_ = false;
}

void TcpEndpoint::update_registration()
{
	int fd = -1;
	uint32_t events = 0;
	switch (state_) {
	case State::connecting:
		fd = cm_fd_;
		events = EPOLLOUT;
		break;
	case State::awaiting_reply:
		fd = cm_fd_;
		events = EPOLLIN;
		break;
	case State::connected:
		fd = conn_.fd();
		watch_stall(); // (a read from a post or a resumed stream may stop mid-frame)
		// While reading is paused, EPOLLIN (and the peer's hang-up) would only wake
		// blocked readers in a loop; posting a receive or sending a response resumes it.
		if (!conn_.rx_paused())
			events |= EPOLLIN;
		if (conn_.wants_write())
			events |= EPOLLOUT;
		break;
	case State::idle:
	case State::closed:
		break;
	}
	if (registered_fd_ >= 0 && (registered_fd_ != fd || events == 0))
		unregister();
	if (fd < 0 || events == 0)
		return;
	if (registered_fd_ != fd || events != registered_events_) {
		int ret = registered_fd_ == fd ? domain().engine().modify_fd(fd, events, this)
					       : domain().engine().add_fd(fd, events, this);
		if (ret) {
			FI_WARN(&provider, FI_LOG_EP_DATA, "cannot watch socket: %s\n",
				fi_strerror(-ret));
			return;
		}
		if (registered_fd_ != fd)
			registered_lazy_ = false; // a new registration starts eager
		registered_fd_ = fd;
		registered_events_ = events;
	}
	if (quiet_ || registered_lazy_)
		update_laziness();
}

void TcpEndpoint::update_laziness()
{
	// Lazy only while connected, quiet and with nothing of ours outstanding: an answer we
	// wait for (an ack, a read response) or a send still queued is looked for every pass.
	bool lazy = quiet_ && state_ == State::connected && conn_.tx_idle();
	if (lazy == registered_lazy_ || registered_fd_ < 0)
		return;
	if (domain().engine().set_lazy(registered_fd_, lazy) == 0)
		registered_lazy_ = lazy;
}

int TcpEndpoint::set_quiet(bool quiet)
{
	util::LockGuard guard(domain().lock());
	quiet_ = quiet;
	update_laziness();
	return 0;
}

int TcpEndpoint::set_consumer(ofi_rx_inplace_fn consume, void *arg)
{
	util::LockGuard guard(domain().lock());
	conn_.set_consumer(consume, arg);
	return 0;
}

void TcpEndpoint::on_fd_ready(int, uint32_t)
{
	switch (state_) {
	case State::connecting:
		progress_connect();
		break;
	case State::awaiting_reply:
		progress_reply();
		break;
	case State::connected:
		progress_stream();
		break;
	case State::idle:
	case State::closed:
		break;
	}
	update_registration();
}

void TcpEndpoint::flush_sends()
{
	if (state_ != State::connected)
		return; // sent on connect (Connection::attach), or failed with the stream
	conn_.progress_tx();
	update_registration();
}

bool TcpEndpoint::progress_stream()
{
	bool got = conn_.progress_rx();
	if (conn_.tx_queued()) // (nothing to send: no call)
		conn_.progress_tx();
	// Sending may have freed the response slot a paused request was waiting for.
	if (conn_.rx_paused())
		got = conn_.progress_rx() || got;
	watch_stall();
	return got;
}

bool TcpEndpoint::stall_expired()
{
	if (state_ != State::connected)
		return false;
	return conn_.fail_if_stalled(); // (connection_lost has run when it failed)
}

util::FdHandler::Poll TcpEndpoint::poll_fd(int fd)
{
	// Only an established stream is read speculatively (a non-blocking recv that finds
	// nothing costs what the epoll_wait it replaces would); connection management waits
	// for epoll, which the engine still asks every few passes.
	if (state_ != State::connected || fd != conn_.fd())
		return Poll::idle;
	bool got = progress_stream();
	// The busy poller's every pass: most find the registration as it was (update_registration
	// ~50 instructions, a call each time).
	uint32_t events = (conn_.rx_paused() ? 0u : uint32_t(EPOLLIN)) |
			  (conn_.wants_write() ? uint32_t(EPOLLOUT) : 0u);
	if (state_ != State::connected || registered_fd_ != fd || events != registered_events_ ||
	    quiet_ || registered_lazy_)
		update_registration();
	return got ? Poll::busy : Poll::idle;
}

void TcpEndpoint::tx_done(void *context, uint64_t op_flags, uint64_t cq_flags, size_t len,
			  int err)
{
	if (err)
		fail_tx(context, cq_flags, err, err, len);
	else
		complete_tx(op_flags, context, cq_flags, len);
}

void TcpEndpoint::rx_done(void *context, uint64_t op_flags, uint64_t cq_flags, void *buf,
			  size_t len, uint64_t data, int err, size_t olen)
{
	if (err) {
		fail_rx(context, cq_flags, err, err, len, buf, olen, data);
		return;
	}
	if (cq_flags & FI_REMOTE_WRITE) {
		// Remote CQ data of an RMA write: always reported, it has no posting flags.
		complete_rx(FI_COMPLETION, remote_write_context(), cq_flags, len, nullptr, data);
		return;
	}
	complete_rx(op_flags, context, cq_flags, len, buf, data);
}

void TcpEndpoint::remote_done(uint64_t flags)
{
	count_remote(flags);
}

int TcpEndpoint::remote_access(uint64_t key, uint64_t offset, uint64_t len, uint64_t access,
			       uint8_t **addr, uint64_t *serial)
{
	return tcp_domain().remote_access(access_id(), key, offset, len, access, addr, serial);
}

bool TcpEndpoint::region_alive(uint64_t key, uint64_t serial)
{
	return tcp_domain().mr_map().alive(key, serial);
}

void TcpEndpoint::connection_lost(int err)
{
	state_ = State::closed;
	unregister();
	if (srx_)
		srx_->forget(this);
	if (err)
		FI_INFO(&provider, FI_LOG_EP_DATA, "connection to %s lost: %s\n",
			sockaddr_to_string(reinterpret_cast<const sockaddr *>(&peer_)).c_str(),
			fi_strerror(err));
	if (eq())
		eq()->write_cm(FI_SHUTDOWN, &ep_fid()->fid, nullptr, nullptr, 0);
}

} // namespace tcp
