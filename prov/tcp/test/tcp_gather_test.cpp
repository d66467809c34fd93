// Sending a backlog: every queued operation leaves in one sendmsg (counted by interposing
// the libc call in this test program), in order, and a partial send resumes mid-entry; a
// burst of sends posted in one progress pass leaves together (send coalescing).
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/test/tcp_sink_pair.h"
#include "test/count_sendmsg.h"
#include "prov/tcp/test/tcp_test_pair.h"

#include <rdma/fi_errno.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

using namespace tcp;

using test_count::sendmsg_calls;

namespace {

struct Pair : tcp_test::SinkPair {
	Pair() : SinkPair(0, false) {}
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

// A backlog of large sends leaves in sendmsgs of about 64 KiB (loopback TCP moved 8-32 KiB
// messages faster so than gathered 7 to a 224 KiB call); a window of small ones (64 of
// 1 KiB, 70 KB) still leaves in one.
TEST(ConnectionGather, LargeSendsLeaveInSendmsgsOfAbout64KiB)
{
	for (size_t size : {1024u, 32768u}) {
		SCOPED_TRACE(size);
		tcp_test::SinkPair p(4 << 20, false);
		constexpr int kCount = 64;
		std::vector<uint8_t> payload(size, 0x5a);
		std::vector<iovec> iovs(kCount);
		for (int i = 0; i < kCount; i++)
			ASSERT_EQ(0, p.a->post_msg(message(payload.data(), size, &iovs[i], nullptr)));
		sendmsg_calls = 0;
		p.a->attach(p.fds[0]);
		p.b->attach(p.fds[1]);
		ASSERT_TRUE(p.a->tx_idle()) << "the socket took the whole backlog";
		if (size == 1024)
			EXPECT_EQ(1, sendmsg_calls);
		else // two 32 KiB messages (with their headers) a call
			EXPECT_EQ(kCount / 2, sendmsg_calls);
		ASSERT_EQ(static_cast<size_t>(kCount), p.oa.sent.size());
	}
}

TEST(ConnectionGather, ASmallSendLeavesAsOneBuffer)
{
	// Header and payload copied together below the inline size (Limits::inject_size),
	// header and the caller's buffer above it.
	Pair p;
	p.a->attach(p.fds[0]);
	p.b->attach(p.fds[1]);
	std::string small(100, 's'), large(1000, 'l');
	std::vector<char> got_small(200), got_large(2000);
	iovec r[2] = {{got_small.data(), got_small.size()}, {got_large.data(), got_large.size()}};
	ASSERT_EQ(0, p.b->post_recv(&r[0], 1, &r[0], FI_COMPLETION));
	ASSERT_EQ(0, p.b->post_recv(&r[1], 1, &r[1], FI_COMPLETION));
	iovec iov;
	sendmsg_calls = 0;
	test_count::sendmsg_buffers = 0;
	ASSERT_EQ(0, p.a->post_msg(message(small.data(), small.size(), &iov, &small)));
	EXPECT_EQ(1, sendmsg_calls.load());
	EXPECT_EQ(1, test_count::sendmsg_buffers.load());
	small.assign(100, 'x'); // copied: the bytes on the wire are those at the post
	ASSERT_EQ(0, p.a->post_msg(message(large.data(), large.size(), &iov, &large)));
	EXPECT_EQ(2, sendmsg_calls.load());
	EXPECT_EQ(3, test_count::sendmsg_buffers.load());
	for (int i = 0; i < 10 && p.ob.received.size() < 2; i++)
		p.b->progress_rx();
	ASSERT_EQ(2u, p.ob.received.size());
	EXPECT_EQ(100u, p.ob.lengths[0]);
	EXPECT_EQ(std::string(100, 's'), std::string(got_small.data(), 100));
	EXPECT_EQ(large, std::string(got_large.data(), 1000));
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

// Send coalescing through the public API (manual progress): a send posted after another in
// the same progress pass waits for the next pass, which sends the burst in one sendmsg.
namespace {

class TcpCoalesce : public ::testing::Test {
protected:
	void open(fi_wait_obj wait = FI_WAIT_NONE, fi_progress progress = FI_PROGRESS_UNSPEC)
	{
		ASSERT_TRUE(pair.open(wait, progress));
		ASSERT_TRUE(pair.connect());
	}
	// Posts `count` receives of 64 bytes on the server.
	void post_receives(int count)
	{
		in.assign(count, std::vector<char>(64));
		for (int i = 0; i < count; i++)
			ASSERT_EQ(0, fi_recv(pair.server, in[i].data(), in[i].size(), nullptr, 0,
					     in[i].data()));
	}
	// Waits for `count` completions on `cq`; their contexts in order.
	std::vector<void *> completions(fid_cq *cq, int count)
	{
		std::vector<void *> got;
		fi_cq_data_entry entry{};
		for (int i = 0; i < count; i++) {
			if (pair.wait_cq(cq, &entry) != 1)
				break;
			got.push_back(entry.op_context);
		}
		return got;
	}
	tcp_test::TcpPair pair;
	std::vector<std::vector<char>> in;
};

} // namespace

TEST_F(TcpCoalesce, AWindowOfSendsCostsTwoSendmsg)
{
	open();
	constexpr int kWindow = 64;
	post_receives(kWindow);
	std::vector<std::string> out;
	for (int i = 0; i < kWindow; i++)
		out.push_back("message " + std::to_string(i));
	sendmsg_calls = 0;
	ASSERT_EQ(0, fi_send(pair.client, out[0].c_str(), out[0].size() + 1, nullptr, 0,
			     &out[0]));
	EXPECT_EQ(1, sendmsg_calls) << "the first send of a pass goes out at once (ping-pong)";
	for (int i = 1; i < kWindow; i++)
		ASSERT_EQ(0, fi_send(pair.client, out[i].c_str(), out[i].size() + 1, nullptr, 0,
				     &out[i]));
	EXPECT_EQ(1, sendmsg_calls) << "the rest wait for the next progress pass";

	std::vector<void *> sent = completions(pair.client_cq, kWindow);
	EXPECT_EQ(2, sendmsg_calls) << "that pass sent the other 63 in one call";
	ASSERT_EQ(size_t(kWindow), sent.size());
	std::vector<void *> received = completions(pair.server_cq, kWindow);
	ASSERT_EQ(size_t(kWindow), received.size());
	for (int i = 0; i < kWindow; i++) {
		EXPECT_EQ(&out[i], sent[i]);
		EXPECT_EQ(in[i].data(), received[i]);
		EXPECT_STREQ(out[i].c_str(), in[i].data());
	}

	// After a pass the next send goes out at once again.
	post_receives(1);
	sendmsg_calls = 0;
	ASSERT_EQ(0, fi_send(pair.client, "again", 6, nullptr, 0, nullptr));
	EXPECT_EQ(1, sendmsg_calls);
	ASSERT_EQ(1u, completions(pair.server_cq, 1).size());
	EXPECT_STREQ("again", in[0].data());
}

TEST_F(TcpCoalesce, HeldSendsStopAtTheGatherLimit)
{
	open();
	// 128 buffers per sendmsg: a small send is one (header and payload together), so the
	// 128th held send is sent at once with the 127 before it.
	constexpr int kCount = 1 + 128 + 3;
	post_receives(kCount);
	char byte = 'x';
	sendmsg_calls = 0;
	for (int i = 0; i < kCount; i++)
		ASSERT_EQ(0, fi_send(pair.client, &byte, 1, nullptr, 0, nullptr));
	EXPECT_EQ(2, sendmsg_calls);
	ASSERT_EQ(size_t(kCount), completions(pair.server_cq, kCount).size());
	EXPECT_EQ(3, sendmsg_calls);
}

TEST_F(TcpCoalesce, BlockingReadFlushesHeldSends)
{
	open(FI_WAIT_FD);
	post_receives(2);
	char byte = 'x';
	ASSERT_EQ(0, fi_send(pair.client, &byte, 1, nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_send(pair.client, &byte, 1, nullptr, 0, in[1].data()));
	// Nothing else progresses: the blocking reads must send the held one themselves.
	fi_cq_data_entry entry{};
	auto start = std::chrono::steady_clock::now();
	ASSERT_EQ(1, fi_cq_sread(pair.client_cq, &entry, 1, nullptr, 5000));
	ASSERT_EQ(1, fi_cq_sread(pair.client_cq, &entry, 1, nullptr, 5000));
	EXPECT_EQ(in[1].data(), entry.op_context);
	ASSERT_EQ(1, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 5000));
	ASSERT_EQ(1, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 5000));
	EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));

	// A single send with FI_MORE is held too; sread on the sender's own CQ sends it.
	post_receives(1);
	iovec iov{&byte, 1};
	fi_msg msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.context = &byte;
	// A pass with nobody asleep (a blocked reader that woke to a queued entry may have
	// made none since it prepared to sleep; while one may sleep, sends go out at once).
	ASSERT_EQ(-FI_EAGAIN, fi_cq_read(pair.client_cq, &entry, 1));
	sendmsg_calls = 0;
	ASSERT_EQ(0, fi_sendmsg(pair.client, &msg, FI_MORE | FI_COMPLETION));
	EXPECT_EQ(0, sendmsg_calls);
	ASSERT_EQ(1, fi_cq_sread(pair.client_cq, &entry, 1, nullptr, 5000));
	EXPECT_EQ(&byte, entry.op_context);
	EXPECT_EQ(1, sendmsg_calls);
	ASSERT_EQ(1, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 5000));
}

TEST_F(TcpCoalesce, TrywaitFlushesBeforeSayingSleep)
{
	open(FI_WAIT_FD);
	post_receives(1);
	char byte = 'x';
	iovec iov{&byte, 1};
	fi_msg msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	fi_cq_data_entry entry{};
	ASSERT_EQ(-FI_EAGAIN, fi_cq_read(pair.client_cq, &entry, 1)); // a pass, nobody asleep
	sendmsg_calls = 0;
	ASSERT_EQ(0, fi_sendmsg(pair.client, &msg, FI_MORE));
	ASSERT_EQ(0, sendmsg_calls);
	// Nothing is readable and both CQs are empty: only the held send is left to do.
	fid *fids[2] = {&pair.client_cq->fid, &pair.server_cq->fid};
	EXPECT_EQ(-FI_EAGAIN, fi_trywait(pair.fabric, fids, 2))
		<< "the send was made: its completion is to be read, not slept on";
	EXPECT_EQ(1, sendmsg_calls);
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ('x', in[0][0]);
	// Nothing held: the fd may be slept on (the completions read first).
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(0, fi_trywait(pair.fabric, fids, 2));
}

TEST_F(TcpCoalesce, ShutdownAndCloseSendWhatIsHeld)
{
	open();
	post_receives(4);
	const char *text[4] = {"one", "two", "three", "four"};
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, fi_send(pair.client, text[i], strlen(text[i]) + 1, nullptr, 0,
				     nullptr));
	ASSERT_EQ(0, fi_shutdown(pair.client, 0));
	ASSERT_EQ(2u, completions(pair.server_cq, 2).size());
	EXPECT_STREQ("one", in[0].data());
	EXPECT_STREQ("two", in[1].data());

	// fi_close the same way (on a new connection).
	tcp_test::TcpPair second;
	ASSERT_TRUE(second.open());
	ASSERT_TRUE(second.connect());
	std::vector<std::vector<char>> buf(2, std::vector<char>(64));
	for (auto &b : buf)
		ASSERT_EQ(0, fi_recv(second.server, b.data(), b.size(), nullptr, 0, b.data()));
	for (int i = 2; i < 4; i++)
		ASSERT_EQ(0, fi_send(second.client, text[i], strlen(text[i]) + 1, nullptr, 0,
				     nullptr));
	ASSERT_EQ(0, fi_close(&second.client->fid));
	second.client = nullptr;
	fi_cq_data_entry entry{};
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(1, second.wait_cq(second.server_cq, &entry)) << i;
	EXPECT_STREQ("three", buf[0].data());
	EXPECT_STREQ("four", buf[1].data());
}

TEST_F(TcpCoalesce, AutoProgressSendsAtOnce)
{
	open(FI_WAIT_NONE, FI_PROGRESS_AUTO);
	post_receives(8);
	char byte = 'x';
	sendmsg_calls = 0;
	for (int i = 0; i < 8; i++) {
		ASSERT_EQ(0, fi_send(pair.client, &byte, 1, nullptr, 0, nullptr));
		EXPECT_EQ(i + 1, sendmsg_calls) << "no thread of ours would flush a held send";
	}
	ASSERT_EQ(8u, completions(pair.server_cq, 8).size());
}
