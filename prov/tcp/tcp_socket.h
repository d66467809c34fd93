// Socket setup shared by active and passive endpoints.
#ifndef PROV_TCP_TCP_SOCKET_H
#define PROV_TCP_TCP_SOCKET_H

#include <netinet/in.h>
#include <sys/socket.h>

namespace tcp {

// A non-blocking, close-on-exec stream socket with TCP_NODELAY as FI_TCP_NODELAY says.
// Returns the fd or -FI_E*.
int open_stream_socket(int family);
void apply_socket_options(int fd);

// Binds to `addr`; when its port is 0 and FI_TCP_PORT_LOW/HIGH_RANGE are set, takes the first
// free port of that range. Returns 0 or -FI_E*.
int bind_in_port_range(int fd, const sockaddr *addr, socklen_t len);

// getsockname/getpeername into a caller's buffer with the fi_getname contract: *addrlen is
// set to the needed size, -FI_ETOOSMALL when the buffer is too small.
int copy_address_out(const sockaddr_storage &addr, void *buf, size_t *addrlen);

// An IPv4 or IPv6 address, the only families tcp endpoints use: 28 bytes where a
// sockaddr_storage takes 128 (an endpoint per connection keeps two).
union IpAddress {
	sockaddr sa;
	sockaddr_in in4;
	sockaddr_in6 in6;
};
int copy_address_out(const IpAddress &addr, void *buf, size_t *addrlen);

} // namespace tcp

#endif
