/* Out-of-band control channel of fi_pingpong: a plain TCP socket. */
#include "fi_pingpong.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

/* The largest endpoint name we accept from the peer; its bytes are untrusted. */
#define PP_MAX_NAME_LEN 4096

static int resolve(const char *node, const char *port, bool passive, bool ipv6,
		   struct addrinfo **res)
{
	struct addrinfo hints = { 0 };
	hints.ai_family = ipv6 ? AF_INET6 : AF_INET;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_protocol = IPPROTO_TCP;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	int ret = getaddrinfo(node, port, &hints, res);
	if (ret) {
		fprintf(stderr, "getaddrinfo(%s:%s): %s\n", node ? node : "*", port,
			gai_strerror(ret));
		return -FI_EINVAL;
	}
	return 0;
}

static int ctrl_listen_and_accept(struct pp_test *t)
{
	const char *port = t->opts.src_port ? t->opts.src_port : PP_DEFAULT_CTRL_PORT;
	struct addrinfo *res;
	int ret = resolve(NULL, port, true, t->opts.ipv6, &res);
	if (ret)
		return ret;

	int listen_fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
	if (listen_fd < 0) {
		ret = -errno;
		goto out;
	}
	int one = 1;
	setsockopt(listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(listen_fd, res->ai_addr, res->ai_addrlen) || listen(listen_fd, 1)) {
		ret = -errno;
		fprintf(stderr, "cannot listen on control port %s: %s\n", port, strerror(errno));
		close(listen_fd);
		goto out;
	}
	pp_debug("server: waiting for the client on control port %s\n", port);
	t->ctrl_fd = accept(listen_fd, NULL, NULL);
	if (t->ctrl_fd < 0)
		ret = -errno;
	close(listen_fd);
out:
	freeaddrinfo(res);
	return ret;
}

static int ctrl_connect(struct pp_test *t)
{
	const char *port = t->opts.dst_port ? t->opts.dst_port : PP_DEFAULT_CTRL_PORT;
	struct addrinfo *res;
	int ret = resolve(t->opts.dst_addr, port, false, t->opts.ipv6, &res);
	if (ret)
		return ret;

	ret = -FI_ECONNREFUSED;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (t->opts.src_port) {
			struct addrinfo *local;
			int one = 1;
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (resolve(NULL, t->opts.src_port, true, t->opts.ipv6, &local) == 0) {
				int bound = bind(fd, local->ai_addr, local->ai_addrlen);
				freeaddrinfo(local);
				if (bound) {
					close(fd);
					continue;
				}
			}
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			t->ctrl_fd = fd;
			ret = 0;
			break;
		}
		close(fd);
	}
	if (ret)
		fprintf(stderr, "cannot connect to %s:%s: %s\n", t->opts.dst_addr, port,
			strerror(errno));
	freeaddrinfo(res);
	return ret;
}

int pp_ctrl_open(struct pp_test *t)
{
	int ret = t->opts.dst_addr ? ctrl_connect(t) : ctrl_listen_and_accept(t);
	if (ret)
		return ret;
	/* A peer that dies must not leave us blocked forever on the control socket. */
	struct timeval tv = { .tv_sec = PP_CTRL_TIMEOUT_SEC };
	setsockopt(t->ctrl_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	pp_debug("control connection established\n");
	return 0;
}

void pp_ctrl_close(struct pp_test *t)
{
	if (t->ctrl_fd >= 0)
		close(t->ctrl_fd);
	t->ctrl_fd = -1;
}

int pp_ctrl_send(struct pp_test *t, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(t->ctrl_fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "control send failed: %s\n", strerror(errno));
			return -FI_ECONNABORTED;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pp_ctrl_recv(struct pp_test *t, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = recv(t->ctrl_fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "control receive failed: %s\n",
				n == 0 ? "peer closed the connection" : strerror(errno));
			return -FI_ECONNABORTED;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int pp_ctrl_sync(struct pp_test *t)
{
	static const char question[2] = "q", answer[2] = "a";
	char reply[2];
	int ret;

	if (t->opts.dst_addr) {
		ret = pp_ctrl_send(t, question, sizeof(question));
		if (!ret)
			ret = pp_ctrl_recv(t, reply, sizeof(reply));
		if (!ret && memcmp(reply, answer, sizeof(answer)))
			ret = -FI_EOTHER;
	} else {
		ret = pp_ctrl_recv(t, reply, sizeof(reply));
		if (!ret && memcmp(reply, question, sizeof(question)))
			ret = -FI_EOTHER;
		if (!ret)
			ret = pp_ctrl_send(t, answer, sizeof(answer));
	}
	if (ret == -FI_EOTHER)
		fprintf(stderr, "control sync: unexpected message from peer\n");
	return ret;
}

/* The client tells the server how many pongs it got, so both print the same #ack. */
int pp_ctrl_exchange_count(struct pp_test *t, long *acked)
{
	static const char ok[] = "cnt ok";
	char field[PP_COUNT_FIELD_LEN + 1] = { 0 };
	char reply[sizeof(ok)];
	int ret;

	if (t->opts.dst_addr) {
		snprintf(field, sizeof(field), "%ld", *acked);
		ret = pp_ctrl_send(t, field, PP_COUNT_FIELD_LEN);
		if (!ret)
			ret = pp_ctrl_recv(t, reply, sizeof(reply));
		if (!ret && memcmp(reply, ok, sizeof(ok))) {
			fprintf(stderr, "control: peer did not confirm the count\n");
			ret = -FI_EOTHER;
		}
		return ret;
	}
	ret = pp_ctrl_recv(t, field, PP_COUNT_FIELD_LEN);
	if (ret)
		return ret;
	char *end;
	long value = strtol(field, &end, 10);
	if (end == field || value < 0) {
		fprintf(stderr, "control: malformed count from peer\n");
		return -FI_EOTHER;
	}
	*acked = value;
	return pp_ctrl_send(t, ok, sizeof(ok));
}

int pp_ctrl_send_name(struct pp_test *t, const void *name, size_t len, uint32_t format)
{
	uint32_t wire_len = htonl((uint32_t)len);
	int ret = pp_ctrl_send(t, &wire_len, sizeof(wire_len));
	if (!ret)
		ret = pp_ctrl_send(t, &format, sizeof(format));
	if (!ret)
		ret = pp_ctrl_send(t, name, len);
	return ret;
}

int pp_ctrl_recv_name(struct pp_test *t, void **name, size_t *len, uint32_t *format)
{
	uint32_t wire_len;
	int ret = pp_ctrl_recv(t, &wire_len, sizeof(wire_len));
	if (!ret)
		ret = pp_ctrl_recv(t, format, sizeof(*format));
	if (ret)
		return ret;
	*len = ntohl(wire_len);
	if (*len == 0 || *len > PP_MAX_NAME_LEN) {
		fprintf(stderr, "control: peer sent an invalid name length %zu\n", *len);
		return -FI_EINVAL;
	}
	*name = malloc(*len);
	if (!*name)
		return -FI_ENOMEM;
	ret = pp_ctrl_recv(t, *name, *len);
	if (ret) {
		free(*name);
		*name = NULL;
	}
	return ret;
}
