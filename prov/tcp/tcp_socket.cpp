#include "prov/tcp/tcp_socket.h"

#include "prov/tcp/tcp_interfaces.h"
#include "prov/tcp/tcp_provider.h"

#include <rdma/fi_errno.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tcp {

void apply_socket_options(int fd)
{
	int on = settings().nodelay ? 1 : 0;
	// Failure only costs latency, so it is not an error.
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
}

int open_stream_socket(int family)
{
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	apply_socket_options(fd);
	return fd;
}

int bind_in_port_range(int fd, const sockaddr *addr, socklen_t len)
{
	const Settings &s = settings();
	if (sockaddr_port(addr) != 0 || s.port_low == 0 || s.port_high == 0) {
		if (::bind(fd, addr, len) == 0)
			return 0;
		return -errno;
	}
	sockaddr_storage attempt{};
	memcpy(&attempt, addr, len);
	for (int port = s.port_low; port <= s.port_high; port++) {
		set_sockaddr_port(reinterpret_cast<sockaddr *>(&attempt), static_cast<uint16_t>(port));
		if (::bind(fd, reinterpret_cast<sockaddr *>(&attempt), len) == 0)
			return 0;
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -FI_EADDRINUSE;
}

int copy_address_out(const IpAddress &addr, void *buf, size_t *addrlen)
{
	sockaddr_storage full{};
	memcpy(&full, &addr, sizeof(addr));
	return copy_address_out(full, buf, addrlen);
}

int copy_address_out(const sockaddr_storage &addr, void *buf, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	size_t need = sockaddr_length(reinterpret_cast<const sockaddr *>(&addr));
	if (need == 0)
		return -FI_EADDRNOTAVAIL;
	size_t room = *addrlen;
	*addrlen = need;
	if (room < need || !buf)
		return -FI_ETOOSMALL;
	memcpy(buf, &addr, need);
	return 0;
}

} // namespace tcp
