/* The out-of-band TCP socket: meeting point, barrier and side channel of two test processes. */
#include "shared.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define FT_OOB_CONNECT_TIMEOUT_SEC 10

static int oob_listen_and_accept(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	struct addrinfo *res;
	int ret = getaddrinfo(ft.opts.src_addr, ft.opts.oob_port, &hints, &res);
	if (ret) {
		FT_ERR("getaddrinfo(oob port %s): %s", ft.opts.oob_port, gai_strerror(ret));
		return -FI_EINVAL;
	}
	int fd = socket(res->ai_family, res->ai_socktype, 0);
	int one = 1;
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 1)) {
		FT_ERR("cannot listen on oob port %s: %s", ft.opts.oob_port, strerror(errno));
		ret = -FI_EADDRINUSE;
	} else {
		/* Do not wait forever for a client that never comes. */
		struct timeval tv = { .tv_sec = 3 * FT_OOB_CONNECT_TIMEOUT_SEC };
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		ft.oob_fd = accept(fd, NULL, NULL);
		if (ft.oob_fd < 0) {
			FT_ERR("no client connected to oob port %s: %s", ft.opts.oob_port,
			       strerror(errno));
			ret = -FI_ETIMEDOUT;
		}
	}
	if (fd >= 0)
		close(fd);
	freeaddrinfo(res);
	return ret;
}

/* The server may still be starting, so the client retries for a while. */
static int oob_connect(void)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	int ret = getaddrinfo(ft.opts.dst_addr, ft.opts.oob_port, &hints, &res);
	if (ret) {
		FT_ERR("getaddrinfo(%s:%s): %s", ft.opts.dst_addr, ft.opts.oob_port,
		       gai_strerror(ret));
		return -FI_EINVAL;
	}
	/* The server may start slowly (emulation): wait at least as long as for a completion. */
	time_t deadline = time(NULL) + (ft.opts.timeout_sec > FT_OOB_CONNECT_TIMEOUT_SEC ?
					ft.opts.timeout_sec : FT_OOB_CONNECT_TIMEOUT_SEC);
	ret = -FI_ECONNREFUSED;
	while (ret && time(NULL) <= deadline) {
		int fd = socket(res->ai_family, res->ai_socktype, 0);
		if (fd < 0)
			break;
		if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
			ft.oob_fd = fd;
			ret = 0;
		} else {
			close(fd);
			usleep(50 * 1000);
		}
	}
	if (ret)
		FT_ERR("cannot reach the server's oob port %s:%s", ft.opts.dst_addr,
		       ft.opts.oob_port);
	freeaddrinfo(res);
	return ret;
}

int ft_oob_open(void)
{
	if (ft.oob_fd >= 0)
		return 0;
	int ret = ft.server ? oob_listen_and_accept() : oob_connect();
	if (ret)
		return ret;
	/* A peer that died must turn into an error here, not a hang. */
	struct timeval tv = { .tv_sec = ft.opts.timeout_sec + 20 };
	setsockopt(ft.oob_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	/* Syncs are tiny back-to-back messages: Nagle plus delayed ACKs would add ~40 ms each. */
	int one = 1;
	setsockopt(ft.oob_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
}

void ft_oob_close(void)
{
	if (ft.oob_fd >= 0)
		close(ft.oob_fd);
	ft.oob_fd = -1;
}

int ft_oob_send(const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(ft.oob_fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			FT_ERR("oob send: %s", strerror(errno));
			return -FI_ECONNABORTED;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ft_oob_recv(void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(ft.oob_fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			FT_ERR("oob receive: %s", n == 0 ? "peer closed the connection" :
			       strerror(errno));
			return -FI_ECONNABORTED;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int ft_oob_exchange(const void *mine, void *theirs, size_t len)
{
	int ret = ft_oob_send(mine, len);
	return ret ? ret : ft_oob_recv(theirs, len);
}

bool ft_oob_peer_gone(void)
{
	if (ft.oob_fd < 0)
		return false;
	struct pollfd pfd = { .fd = ft.oob_fd, .events = POLLIN };
	if (poll(&pfd, 1, 0) <= 0)
		return false;
	char byte;
	ssize_t n = recv(ft.oob_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK);
}

int ft_oob_sync(void)
{
	char mine = 's', theirs = 0;
	int ret = ft_oob_exchange(&mine, &theirs, 1);
	if (!ret && theirs != 's') {
		FT_ERR("oob sync: unexpected byte 0x%02x", (unsigned char)theirs);
		return -FI_EOTHER;
	}
	return ret;
}

/* Both sides learn each other's status, so a "not run" on one side is one on both. */
int ft_oob_agree(int my_ret)
{
	int32_t mine = my_ret, theirs = 0;
	int ret = ft_oob_exchange(&mine, &theirs, sizeof(mine));
	if (ret)
		return my_ret ? my_ret : ret;
	return my_ret ? my_ret : theirs;
}
