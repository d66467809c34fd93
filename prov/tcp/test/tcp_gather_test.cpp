// Sending a backlog: every queued operation leaves in one sendmsg (counted by interposing
// the libc call in this test program), in order, and a partial send resumes mid-entry.
#include "prov/tcp/tcp_connection.h"

#include <rdma/fi_errno.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace tcp;

namespace {
int sendmsg_calls = 0;
}

// Counts, then does what libc's sendmsg does.
extern "C" ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	++sendmsg_calls;
	return syscall(SYS_sendmsg, fd, msg, flags);
}

namespace {

class Sink : public ConnectionOwner {
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

	std::vector<void *> sent, received;
	std::vector<size_t> lengths;
	int errors = 0, lost = 0;
};

struct Pair {
	Pair()
	{
		int sv[2];
		EXPECT_EQ(0, socketpair(AF_UNIX, SOCK_STREAM, 0, sv));
		for (int fd : sv)
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
		fds[0] = sv[0];
		fds[1] = sv[1];
		Limits limits;
		limits.tx_size = 64;
		limits.rx_size = 64;
		a = std::make_unique<Connection>(oa, limits);
		b = std::make_unique<Connection>(ob, limits);
	}
	Sink oa, ob;
	std::unique_ptr<Connection> a, b;
	int fds[2];
};

PostArgs message(const void *buf, size_t len, iovec *iov, void *context)
{
	*iov = {const_cast<void *>(buf), len};
	PostArgs args;
	args.iov = iov;
	args.count = 1;
	args.context = context;
	args.op_flags = FI_COMPLETION;
	return args;
}

} // namespace

TEST(ConnectionGather, QueuedSendsLeaveInOneSystemCall)
{
	Pair p;
	std::vector<std::string> texts;
	std::vector<iovec> iovs(40);
	for (int i = 0; i < 40; i++)
		texts.push_back("message " + std::to_string(i));
	// Posted before the stream exists: they wait in the queue.
	for (int i = 0; i < 40; i++)
		ASSERT_EQ(0, p.a->post_msg(message(texts[i].data(), texts[i].size() + 1, &iovs[i],
						   &texts[i])));
	std::vector<std::vector<char>> bufs(40, std::vector<char>(64));
	for (int i = 0; i < 40; i++) {
		iovec r{bufs[i].data(), bufs[i].size()};
		ASSERT_EQ(0, p.b->post_recv(&r, 1, &bufs[i], FI_COMPLETION));
	}
	sendmsg_calls = 0;
	p.a->attach(p.fds[0]);
	EXPECT_EQ(1, sendmsg_calls); // 40 headers and 40 payloads: 80 buffers, one call
	ASSERT_EQ(40u, p.oa.sent.size());
	for (int i = 0; i < 40; i++)
		EXPECT_EQ(&texts[i], p.oa.sent[i]);
	p.b->attach(p.fds[1]);
	for (int i = 0; i < 100 && p.ob.received.size() < 40; i++)
		p.b->progress_rx();
	ASSERT_EQ(40u, p.ob.received.size());
	for (int i = 0; i < 40; i++) {
		EXPECT_EQ(&bufs[i], p.ob.received[i]);
		EXPECT_STREQ(texts[i].c_str(), bufs[i].data());
	}
	EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
}

TEST(ConnectionGather, PartialSendOfABacklogResumesInOrder)
{
	Pair p;
	int small = 4096;
	setsockopt(p.fds[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	p.a->attach(p.fds[0]);
	p.b->attach(p.fds[1]);
	// A large message fills the socket; the small ones behind it queue, then leave
	// together once it drains, each intact and in order.
	std::vector<uint8_t> big(1 << 20), big_in(1 << 20);
	for (size_t i = 0; i < big.size(); i++)
		big[i] = static_cast<uint8_t>(i * 13);
	iovec big_iov;
	ASSERT_EQ(0, p.a->post_msg(message(big.data(), big.size(), &big_iov, &big)));
	std::vector<uint32_t> values(60);
	std::vector<iovec> iovs(60);
	for (uint32_t i = 0; i < 60; i++) {
		values[i] = i * 1000003u;
		ASSERT_EQ(0, p.a->post_msg(message(&values[i], sizeof(values[i]), &iovs[i],
						   &values[i])));
	}
	iovec r{big_in.data(), big_in.size()};
	ASSERT_EQ(0, p.b->post_recv(&r, 1, &big_in, FI_COMPLETION));
	std::vector<uint32_t> got(60);
	for (int i = 0; i < 60; i++) {
		iovec ri{&got[i], sizeof(got[i])};
		// The receive queue holds 64: post as room frees up.
		while (p.b->rx_free() == 0) {
			p.a->progress_tx();
			p.b->progress_rx();
		}
		ASSERT_EQ(0, p.b->post_recv(&ri, 1, &got[i], FI_COMPLETION));
	}
	for (int i = 0; i < 200000 && p.ob.received.size() < 61; i++) {
		p.a->progress_tx();
		p.b->progress_rx();
	}
	ASSERT_EQ(61u, p.ob.received.size());
	EXPECT_EQ(big, big_in);
	EXPECT_EQ(values, got);
	ASSERT_EQ(61u, p.oa.sent.size());
	EXPECT_EQ(&big, p.oa.sent[0]);
	for (int i = 0; i < 60; i++)
		EXPECT_EQ(&values[i], p.oa.sent[i + 1]);
	EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
}
