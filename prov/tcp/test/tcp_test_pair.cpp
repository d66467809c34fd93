#include "prov/tcp/test/tcp_test_pair.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace tcp_test {

int closed_port(int family)
{
	int fd = socket(family, SOCK_STREAM, 0);
	sockaddr_storage ss{};
	socklen_t len;
	if (family == AF_INET) {
		auto *in = reinterpret_cast<sockaddr_in *>(&ss);
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*in);
	} else {
		auto *in6 = reinterpret_cast<sockaddr_in6 *>(&ss);
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		len = sizeof(*in6);
	}
	bind(fd, reinterpret_cast<sockaddr *>(&ss), len);
	getsockname(fd, reinterpret_cast<sockaddr *>(&ss), &len);
	close(fd);
	return family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in *>(&ss)->sin_port)
				 : ntohs(reinterpret_cast<sockaddr_in6 *>(&ss)->sin6_port);
}

} // namespace tcp_test
