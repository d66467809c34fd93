/*
 * tcp_baseline: the physical limit the libfabric numbers are compared with. A plain TCP
 * socket ping-pong and a one-way stream over loopback, between two processes (the
 * program forks its own server), with no library in between.
 *
 * usage: tcp_baseline pingpong|stream|rate SIZE ITERATIONS [spin]
 * Prints one line: "bytes N usec_xfer X MB_sec Y Mxfers_sec Z".
 * Latency is half a round trip; the stream is acknowledged by the server once at the end,
 * so its time covers delivery of every byte, not just the copy into the socket buffer.
 * rate: windows of 64 messages (one send call each, as a library without batching would),
 * the server answering each whole window with one byte, as fi_bw does; ITERATIONS is
 * rounded up to whole windows.
 * spin: both sides busy-poll non-blocking sockets (recv/send with MSG_DONTWAIT retried on
 * EAGAIN), the peer of a busy-polling fabric benchmark (-c spin); without it they sleep in
 * blocking calls, the peer of -c sread.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Set by "spin": every socket call is non-blocking and retried at once. */
static int spin;

#define WINDOW 64

static int retry(ssize_t n)
{
	return n < 0 && (errno == EINTR || (spin && (errno == EAGAIN || errno == EWOULDBLOCK)));
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | (spin ? MSG_DONTWAIT : 0));
		if (retry(n))
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, char *buf, size_t len)
{
	while (len) {
		ssize_t n = recv(fd, buf, len, spin ? MSG_DONTWAIT : 0);
		if (retry(n))
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The same socket options a TCP fabric provider would use for latency. */
static void tune(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static void set_nonblocking(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

enum mode { PINGPONG, STREAM, RATE };

static int serve(int listener, enum mode mode, char *buf, size_t size, long iters)
{
	int fd = accept(listener, NULL, NULL);
	if (fd < 0)
		return 1;
	tune(fd);
	if (spin)
		set_nonblocking(fd);
	int pingpong = mode == PINGPONG;
	for (long i = 0; i < iters; i++) {
		if (read_all(fd, buf, size))
			return 1;
		if (pingpong && write_all(fd, buf, size))
			return 1;
		if (mode == RATE && (i + 1) % WINDOW == 0 && write_all(fd, buf, 1))
			return 1;
	}
	if (mode == RATE) {
		close(fd);
		return 0;
	}
	if (!pingpong && write_all(fd, buf, 1))
		return 1;
	close(fd);
	return 0;
}

static int drive(int fd, enum mode mode, char *buf, size_t size, long iters)
{
	int pingpong = mode == PINGPONG;
	for (long i = 0; i < iters; i++) {
		if (write_all(fd, buf, size))
			return 1;
		if (pingpong && read_all(fd, buf, size))
			return 1;
		if (mode == RATE && (i + 1) % WINDOW == 0 && read_all(fd, buf, 1))
			return 1;
	}
	if (mode == RATE)
		return 0;
	if (!pingpong && read_all(fd, buf, 1))
		return 1;
	return 0;
}

int main(int argc, char **argv)
{
	enum mode mode = PINGPONG;
	if (argc == 5 && !strcmp(argv[4], "spin"))
		spin = 1;
	else if (argc != 4)
		mode = -1;
	if (mode == PINGPONG && !strcmp(argv[1], "stream"))
		mode = STREAM;
	else if (mode == PINGPONG && !strcmp(argv[1], "rate"))
		mode = RATE;
	else if (mode == PINGPONG && strcmp(argv[1], "pingpong"))
		mode = -1;
	if ((int)mode < 0) {
		fprintf(stderr, "usage: %s pingpong|stream|rate SIZE ITERATIONS [spin]\n", argv[0]);
		return 2;
	}
	long size = atol(argv[2]), iters = atol(argv[3]);
	if (size <= 0 || iters <= 0) {
		fprintf(stderr, "SIZE and ITERATIONS must be positive\n");
		return 2;
	}
	if (mode == RATE)
		iters = (iters + WINDOW - 1) / WINDOW * WINDOW;
	char *buf = calloc(1, (size_t)size);
	int listener = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in addr = { .sin_family = AF_INET };
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(addr);
	/* Port 0: the kernel picks a free port, so concurrent runs never collide. */
	if (!buf || listener < 0 || bind(listener, (struct sockaddr *)&addr, sizeof(addr)) ||
	    listen(listener, 1) || getsockname(listener, (struct sockaddr *)&addr, &len)) {
		perror("tcp_baseline setup");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0)
		_exit(serve(listener, mode, buf, (size_t)size, iters));
	close(listener);

	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("connect");
		return 1;
	}
	tune(fd);
	if (spin)
		set_nonblocking(fd);
	double start = now_usec();
	int failed = drive(fd, mode, buf, (size_t)size, iters);
	double elapsed = now_usec() - start;
	close(fd);
	int status = 0;
	waitpid(child, &status, 0);
	if (failed || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "tcp_baseline: transfer failed\n");
		return 1;
	}
	double xfers = mode == PINGPONG ? 2.0 * iters : (double)iters;
	double usec_xfer = elapsed / xfers;
	printf("bytes %ld usec_xfer %.3f MB_sec %.2f Mxfers_sec %.4f\n", size, usec_xfer,
	       size * xfers / elapsed, 1.0 / usec_xfer);
	free(buf);
	return 0;
}
