#include "prov/shm/shm_passive_endpoint.h"

#include "prov/shm/shm_cm.h"
#include "prov/shm/shm_provider.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"

#include <rdma/fi_cm.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace shm {

ShmPassiveEndpoint::ShmPassiveEndpoint(ShmFabric &fabric, const struct fi_info *info,
				       void *context)
    : util::PassiveEndpoint(fabric, info, context)
{
	if (!info->src_addr || !parse_address(info->src_addr, info->src_addrlen, &addr_))
		address_for_service("0", &addr_);
	install_ops<ShmPassiveEndpoint>();
}
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmPassiveEndpoint>().listen);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmPassiveEndpoint>().getname);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmPassiveEndpoint>().setname);
UTIL_ASSERT_IMPLEMENTED(util::make_cm_ops<ShmPassiveEndpoint>().reject);
UTIL_ASSERT_IMPLEMENTED(util::make_ep_ops<ShmPassiveEndpoint>().getopt);

ShmPassiveEndpoint::~ShmPassiveEndpoint()
{
	util::LockGuard g(fabric().engine().lock());
	if (eq()) {
		// Unread FI_CONNREQ events go with their requests; read ones keep a valid handle
		// (for fi_reject) whose socket is closed, so fi_endpoint fails.
		eq()->discard_events_of(&pep_fid()->fid, [this](fi_info *info) {
			if (info && info->handle) {
				auto *r = util::fid_cast<ConnRequest>(info->handle, FI_CLASS_CONNREQ);
				if (r) {
					forget(r);
					r->set_owner(nullptr);
					delete r;
				}
				info->handle = nullptr;
			}
		});
	}
	for (ConnRequest *r : delivered_) {
		r->set_owner(nullptr);
		r->drop();
	}
	for (size_t i = handshakes_.size(); i-- > 0;)
		drop_handshake(i);
	if (listen_fd_ >= 0) {
		fabric().engine().remove_fd(listen_fd_);
		::close(listen_fd_);
	}
}

int ShmPassiveEndpoint::listen()
{
	if (!eq())
		return -FI_ENOEQ;
	if (listen_fd_ >= 0)
		return -FI_EINVAL;
	bool any = strcmp(addr_.text, "fi_shm://0") == 0;
	for (int attempt = 0; attempt < 16; attempt++) {
		if (any)
			addr_ = unique_address();
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		sockaddr_un name;
		socklen_t len = socket_name(addr_, &name);
		if (::bind(fd, reinterpret_cast<sockaddr *>(&name), len) != 0) {
			int err = errno;
			::close(fd);
			if (err == EADDRINUSE && any)
				continue;
			return err == EADDRINUSE ? -FI_EADDRINUSE : -err;
		}
		if (::listen(fd, SOMAXCONN) != 0) {
			int err = errno;
			::close(fd);
			return -err;
		}
		util::LockGuard g(fabric().engine().lock());
		int ret = fabric().engine().add_fd(fd, EPOLLIN, this);
		if (ret) {
			::close(fd);
			return ret;
		}
		listen_fd_ = fd;
		return 0;
	}
	return -FI_EADDRINUSE;
}

int ShmPassiveEndpoint::getname(void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	size_t room = *addrlen;
	*addrlen = kAddrLen;
	if (!addr || room < kAddrLen)
		return -FI_ETOOSMALL;
	memcpy(addr, addr_.text, kAddrLen);
	return 0;
}

int ShmPassiveEndpoint::setname(void *addr, size_t addrlen)
{
	ShmAddress a;
	if (!parse_address(addr, addrlen, &a))
		return -FI_EINVAL;
	if (listen_fd_ >= 0)
		return -FI_EOPBADSTATE;
	addr_ = a;
	return 0;
}

int ShmPassiveEndpoint::getopt(int level, int optname, void *optval, size_t *optlen)
{
	if (level != FI_OPT_ENDPOINT)
		return -FI_ENOPROTOOPT;
	if (optname != FI_OPT_CM_DATA_SIZE)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_ETOOSMALL;
	*static_cast<size_t *>(optval) = kMaxCmData;
	*optlen = sizeof(size_t);
	return 0;
}

int ShmPassiveEndpoint::setopt(int level, int, const void *, size_t)
{
	return level == FI_OPT_ENDPOINT ? -FI_ENOPROTOOPT : -FI_ENOPROTOOPT;
}

int ShmPassiveEndpoint::reject(struct fid *handle, const void *param, size_t paramlen)
{
	if (paramlen > kMaxCmData || (paramlen && !param))
		return -FI_EINVAL;
	auto *request = util::fid_cast<ConnRequest>(handle, FI_CLASS_CONNREQ);
	if (!request)
		return -FI_EINVAL;
	util::LockGuard g(fabric().engine().lock());
	if (request->sock() >= 0)
		send_cm(request->sock(), kCmReject, param, paramlen, nullptr, 0);
	delete request;
	return 0;
}

void ShmPassiveEndpoint::forget(ConnRequest *request)
{
	delivered_.erase(std::remove(delivered_.begin(), delivered_.end(), request),
			 delivered_.end());
}

void ShmPassiveEndpoint::on_fd_ready(int fd, uint32_t)
{
	if (fd == listen_fd_) {
		accept_connections();
		return;
	}
	auto it = std::find(handshakes_.begin(), handshakes_.end(), fd);
	if (it != handshakes_.end())
		read_request(static_cast<size_t>(it - handshakes_.begin()));
}

void ShmPassiveEndpoint::accept_connections()
{
	for (int i = 0; i < kAcceptsPerCall; i++) {
		int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		pid_t pid = 0;
		if (!peer_is_same_user(fd, &pid)) {
			// Another user (or unknown credentials): no memory is ever shared with it.
			FI_WARN(&provider, FI_LOG_EP_CTRL,
				"refusing a connection from pid %d of another user\n",
				static_cast<int>(pid));
			::close(fd);
			continue;
		}
		if (handshakes_.size() >= kMaxHandshakes)
			drop_handshake(0);
		if (fabric().engine().add_fd(fd, EPOLLIN, this) != 0) {
			::close(fd);
			continue;
		}
		handshakes_.push_back(fd);
	}
}

void ShmPassiveEndpoint::drop_handshake(size_t index)
{
	int fd = handshakes_[index];
	fabric().engine().remove_fd(fd);
	::close(fd);
	handshakes_.erase(handshakes_.begin() + static_cast<std::ptrdiff_t>(index));
}

void ShmPassiveEndpoint::read_request(size_t index)
{
	int fd = handshakes_[index];
	CmMessage msg;
	int ret = recv_cm(fd, &msg);
	if (ret == 0)
		return;
	fabric().engine().remove_fd(fd);
	handshakes_.erase(handshakes_.begin() + static_cast<std::ptrdiff_t>(index));
	if (ret == 1 && msg.type == kCmRequest) {
		ret = report_request(fd, msg);
		if (ret == 0)
			return;
	} else if (ret == 1) {
		msg.close_fds();
		ret = -FI_EIO;
	}
	if (ret != -FI_ECONNRESET)
		FI_WARN(&provider, FI_LOG_EP_CTRL, "dropping a connection request: %s\n",
			fi_strerror(-ret));
	::close(fd);
}

int ShmPassiveEndpoint::report_request(int sock, CmMessage &msg)
{
	int memfd = msg.fds[0], bell = msg.fds[1];
	if (!check_eventfd(bell)) {
		msg.close_fds();
		return -FI_EIO;
	}
	std::unique_ptr<Segment> segment;
	try {
		segment = Segment::adopt(memfd); // closes memfd
	} catch (const util::Error &e) {
		::close(bell);
		return e.code();
	}
	pid_t pid = 0;
	peer_is_same_user(sock, &pid);
	fi_info *info = fi_dupinfo(this->info());
	if (!info) {
		::close(bell);
		return -FI_ENOMEM;
	}
	ShmAddress peer;
	char name[kAddrLen];
	snprintf(name, sizeof(name), "peer.%d", static_cast<int>(pid));
	address_for_service(name, &peer);
	free(info->dest_addr);
	free(info->src_addr);
	info->src_addr = malloc(kAddrLen);
	info->dest_addr = malloc(kAddrLen);
	info->src_addrlen = info->dest_addrlen = 0;
	if (!info->src_addr || !info->dest_addr) {
		fi_freeinfo(info);
		::close(bell);
		return -FI_ENOMEM;
	}
	memcpy(info->src_addr, addr_.text, kAddrLen);
	memcpy(info->dest_addr, peer.text, kAddrLen);
	info->src_addrlen = info->dest_addrlen = kAddrLen;
	info->addr_format = FI_ADDR_STR;
	auto *request = new (std::nothrow) ConnRequest(sock, std::move(segment), bell);
	if (!request) {
		fi_freeinfo(info);
		::close(bell);
		return -FI_ENOMEM;
	}
	info->handle = request->handle();
	request->set_owner(this);
	delivered_.push_back(request);
	int ret = eq()->write_cm(FI_CONNREQ, &pep_fid()->fid, info, msg.data, msg.data_len);
	if (ret) {
		request->take_sock(); // the caller closes it
		delete request;
	}
	return ret;
}

} // namespace shm
