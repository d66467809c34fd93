// Two tcp::Connection objects on the ends of a non-blocking AF_UNIX socket pair, each owned by
// a Sink that records what the connection reports: the fixture of the tests that count system
// calls per message (tcp_gather_test: sendmsg; tcp_stage_test: recv/readv).
#pragma once

#include "prov/tcp/tcp_connection.h"

#include <rdma/fi_errno.h>

#include <fcntl.h>
#include <sys/socket.h>

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace tcp_test {

class Sink : public tcp::ConnectionOwner {
public:
	void tx_done(void *context, uint64_t, uint64_t, size_t, int err) override
	{
		sent.push_back(context);
		errors += err != 0;
	}
	void rx_done(void *context, uint64_t, uint64_t, void *, size_t len, uint64_t, int err,
		     size_t) override
	{
		received.push_back(context);
		lengths.push_back(len);
		errors += err != 0;
	}
	void remote_done(uint64_t) override {}
	int remote_access(uint64_t, uint64_t, uint64_t, uint64_t, uint8_t **, uint64_t *) override
	{
		return -FI_EACCES;
	}
	bool region_alive(uint64_t, uint64_t) override { return false; }
	void connection_lost(int) override { ++lost; }
	void tx_counted(uint64_t) override { ++counted; } // an inject's (no completion)

	std::vector<void *> sent, received;
	std::vector<size_t> lengths;
	int errors = 0, lost = 0, counted = 0;
};

struct SinkPair {
	// buffer_bytes: the socket buffers (0: the system's); attach: give the connections their
	// ends now (else the test attaches fds[] itself, e.g. after posting).
	explicit SinkPair(int buffer_bytes = 0, bool attach = true)
	{
		int sv[2];
		EXPECT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		for (int fd : sv)
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		if (buffer_bytes) {
			setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof(buffer_bytes));
			setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
		}
		fds[0] = sv[0];
		fds[1] = sv[1];
		tcp::Limits limits;
		limits.tx_size = 64;
		limits.rx_size = 64;
		a = std::make_unique<tcp::Connection>(oa, limits);
		b = std::make_unique<tcp::Connection>(ob, limits);
		if (attach) {
			a->attach(sv[0]);
			b->attach(sv[1]);
		}
	}
	Sink oa, ob;
	std::unique_ptr<tcp::Connection> a, b;
	int fds[2];
};

} // namespace tcp_test
