// Messaging through the public API on a connected pair: every send/recv form, inject,
// remote CQ data, delivery complete, truncation, cancel, multi-receive, blocking reads and
// the pollable wait fd.
#include "prov/tcp/test/tcp_test_pair.h"

#include <poll.h>
#include <sys/resource.h>

#include <gtest/gtest.h>

#include <array>
#include <chrono>
#include <cstring>
#include <numeric>

using tcp_test::TcpPair;

namespace {

class TcpMsg : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(pair.open());
		ASSERT_TRUE(pair.connect());
	}
	TcpPair pair;
	fi_cq_data_entry entry{};
	fi_cq_err_entry err{};
};

} // namespace

TEST_F(TcpMsg, SendRecvPlainAndVectored)
{
	char out[] = "plain message", in[32] = {};
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(0, fi_send(pair.client, out, sizeof(out), nullptr, 0, out));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(out, entry.op_context);
	EXPECT_EQ(FI_SEND | FI_MSG, entry.flags);
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(in, entry.op_context);
	EXPECT_EQ(FI_RECV | FI_MSG, entry.flags);
	EXPECT_EQ(sizeof(out), entry.len);
	EXPECT_STREQ(out, in);

	// Four buffers on each side, split at different places.
	char s[4][5] = {{'a', 'b', 'c', 'd', 'e'}, {'f', 'g'}, {'h', 'i', 'j'}, {'k'}};
	iovec siov[4] = {{s[0], 5}, {s[1], 2}, {s[2], 3}, {s[3], 1}};
	char r[4][3] = {};
	iovec riov[4] = {{r[0], 3}, {r[1], 3}, {r[2], 3}, {r[3], 3}};
	ASSERT_EQ(0, fi_recvv(pair.server, riov, nullptr, 4, 0, r));
	ASSERT_EQ(0, fi_sendv(pair.client, siov, nullptr, 4, 0, s));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(11u, entry.len);
	EXPECT_EQ(0, memcmp(r, "abcdefghijk", 11));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));

	// More than iov_limit buffers is refused.
	iovec five[5] = {{s[0], 1}, {s[0], 1}, {s[0], 1}, {s[0], 1}, {s[0], 1}};
	EXPECT_EQ(-FI_EINVAL, fi_sendv(pair.client, five, nullptr, 5, 0, nullptr));
	EXPECT_EQ(-FI_EINVAL, fi_recvv(pair.server, five, nullptr, 5, 0, nullptr));
}

TEST_F(TcpMsg, SendmsgRecvmsgWithRemoteData)
{
	char out[] = "with data", in[16] = {};
	iovec riov{in, sizeof(in)}, siov{out, sizeof(out)};
	fi_msg rmsg{};
	rmsg.msg_iov = &riov;
	rmsg.iov_count = 1;
	rmsg.context = in;
	ASSERT_EQ(0, fi_recvmsg(pair.server, &rmsg, 0));
	fi_msg smsg{};
	smsg.msg_iov = &siov;
	smsg.iov_count = 1;
	smsg.context = out;
	smsg.data = 0xfeedface;
	ASSERT_EQ(0, fi_sendmsg(pair.client, &smsg, FI_REMOTE_CQ_DATA | FI_COMPLETION));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA, entry.flags);
	EXPECT_EQ(0xfeedfaceu, entry.data);
	EXPECT_STREQ(out, in);
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));

	EXPECT_EQ(-FI_EBADFLAGS, fi_sendmsg(pair.client, &smsg, 1ULL << 58));
	EXPECT_EQ(-FI_EINVAL, fi_sendmsg(pair.client, nullptr, 0));
}

TEST_F(TcpMsg, SenddataAndInjectdata)
{
	char in[2][16] = {};
	ASSERT_EQ(0, fi_recv(pair.server, in[0], 16, nullptr, 0, in[0]));
	ASSERT_EQ(0, fi_recv(pair.server, in[1], 16, nullptr, 0, in[1]));
	ASSERT_EQ(0, fi_senddata(pair.client, "one", 4, nullptr, 11, 0, in));
	char two[] = "two";
	ASSERT_EQ(0, fi_injectdata(pair.client, two, 4, 22, 0));
	memset(two, 0, sizeof(two));   // inject copied the data already
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(11u, entry.data);
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_EQ(22u, entry.data);
	EXPECT_STREQ("two", in[1]);
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));   // senddata only
	EXPECT_TRUE(pair.cq_stays_empty(pair.client_cq));
}

TEST_F(TcpMsg, InjectHasNoCompletionAndRespectsLimit)
{
	char in[8] = {};
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(0, fi_inject(pair.client, "inj", 4, 0));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_STREQ("inj", in);
	EXPECT_TRUE(pair.cq_stays_empty(pair.client_cq));
	std::vector<char> big(pair.info->tx_attr->inject_size + 1);
	EXPECT_EQ(-FI_EINVAL, fi_inject(pair.client, big.data(), big.size(), 0));
}

TEST_F(TcpMsg, DeliveryCompleteWaitsForTheReceiver)
{
	char out[] = "dc", in[4] = {};
	iovec siov{out, sizeof(out)};
	fi_msg smsg{};
	smsg.msg_iov = &siov;
	smsg.iov_count = 1;
	smsg.context = out;
	ASSERT_EQ(0, fi_sendmsg(pair.client, &smsg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
	// No receive is posted, so the message cannot be delivered yet.
	EXPECT_TRUE(pair.cq_stays_empty(pair.client_cq, 200));
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(1, pair.wait_cq(pair.client_cq, &entry));
	EXPECT_EQ(out, entry.op_context);
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
}

TEST_F(TcpMsg, TruncationIsAnErrorCompletionWithOverflowLength)
{
	std::vector<char> out(100, 'z');
	char in[10];
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(0, fi_send(pair.client, out.data(), out.size(), nullptr, 0, nullptr));
	ASSERT_EQ(-FI_EAVAIL, pair.wait_cq(pair.server_cq, &entry, &err));
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(90u, err.olen);
	EXPECT_EQ(10u, err.len);
	EXPECT_EQ(in, err.op_context);
	// The stream stays in step: the next message arrives intact.
	char again[8] = {};
	ASSERT_EQ(0, fi_recv(pair.server, again, sizeof(again), nullptr, 0, again));
	ASSERT_EQ(0, fi_send(pair.client, "ok", 3, nullptr, 0, nullptr));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
	EXPECT_STREQ("ok", again);
}

TEST_F(TcpMsg, CancelPostedReceive)
{
	char in[8];
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(0, fi_cancel(&pair.server->fid, in));
	ASSERT_EQ(-FI_EAVAIL, pair.wait_cq(pair.server_cq, &entry, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(in, err.op_context);
	EXPECT_NE(0, fi_cancel(&pair.server->fid, in));
}

TEST_F(TcpMsg, MultiRecvFillsOneBufferThenReleasesIt)
{
	size_t min = 16;
	ASSERT_EQ(0, fi_setopt(&pair.server->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			       sizeof(min)));
	char pool[40] = {};
	iovec riov{pool, sizeof(pool)};
	fi_msg rmsg{};
	rmsg.msg_iov = &riov;
	rmsg.iov_count = 1;
	rmsg.context = pool;
	ASSERT_EQ(0, fi_recvmsg(pair.server, &rmsg, FI_MULTI_RECV | FI_COMPLETION));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, fi_send(pair.client, "0123456789", 10, nullptr, 0, nullptr));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry));
		EXPECT_EQ(pool, entry.op_context);
		EXPECT_EQ(static_cast<void *>(pool + 10 * i), entry.buf);
		// 40 - 20 = 20 left after two, 10 after three (< 16): released then.
		EXPECT_EQ(i == 2, (entry.flags & FI_MULTI_RECV) != 0) << i;
	}
}

TEST_F(TcpMsg, SreadTimesOutThenWakesForData)
{
	// A CQ with a wait object, so fi_cq_sread may block.
	fi_cq_attr attr{};
	attr.format = FI_CQ_FORMAT_DATA;
	attr.wait_obj = FI_WAIT_UNSPEC;
	fid_cq *cq = nullptr;
	ASSERT_EQ(0, fi_cq_open(pair.domain, &attr, &cq, nullptr));
	// Not bindable to an enabled endpoint, so use a fresh pair below for data; here only
	// the timeout on an empty CQ.
	auto start = std::chrono::steady_clock::now();
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(cq, &entry, 1, nullptr, 100));
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
			  std::chrono::steady_clock::now() - start)
			  .count();
	EXPECT_GE(ms, 90);
	EXPECT_LT(ms, 2000);
	fi_close(&cq->fid);

	start = std::chrono::steady_clock::now();
	uint32_t event;
	fi_eq_cm_entry cm;
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(pair.client_eq, &event, &cm, sizeof(cm), 100, 0));
	ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		     std::chrono::steady_clock::now() - start)
		     .count();
	EXPECT_GE(ms, 90);
}

TEST(TcpWait, SreadAndWaitFdSeeArrivingData)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open(FI_WAIT_FD));
	ASSERT_TRUE(pair.connect());
	int fd = -1;
	ASSERT_EQ(0, fi_control(&pair.server_cq->fid, FI_GETWAIT, &fd));
	ASSERT_GE(fd, 0);
	char in[8] = {};
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	fid *fids[1] = {&pair.server_cq->fid};
	ASSERT_EQ(0, fi_trywait(pair.fabric, fids, 1));
	pollfd p{fd, POLLIN, 0};
	EXPECT_EQ(0, poll(&p, 1, 50));   // nothing yet
	ASSERT_EQ(0, fi_send(pair.client, "wake", 5, nullptr, 0, nullptr));
	EXPECT_EQ(1, poll(&p, 1, 5000));
	fi_cq_data_entry entry;
	ASSERT_EQ(1, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 5000));
	EXPECT_STREQ("wake", in);
	// A blocking read with data arriving later.
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(1, fi_cq_sread(pair.client_cq, &entry, 1, nullptr, 5000));   // first send
	ASSERT_EQ(0, fi_send(pair.client, "late", 5, nullptr, 0, nullptr));
	ASSERT_EQ(1, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 5000));
	EXPECT_STREQ("late", in);
}

namespace {

// CPU time (user + system) this process has used, in milliseconds.
long cpu_ms()
{
	rusage usage{};
	getrusage(RUSAGE_SELF, &usage);
	return (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 +
	       (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000;
}

} // namespace

TEST(TcpWait, BlockedReadersSleepInsteadOfSpinning)
{
	TcpPair pair;
	ASSERT_TRUE(pair.open(FI_WAIT_UNSPEC));
	ASSERT_TRUE(pair.connect());
	fi_cq_data_entry entry;
	long before = cpu_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 400));
	EXPECT_LT(cpu_ms() - before, 200);

	// Data waiting for a receive that is not posted yet must not wake the reader in a loop.
	ASSERT_EQ(0, fi_send(pair.client, "pending", 8, nullptr, 0, nullptr));
	ASSERT_EQ(1, fi_cq_sread(pair.client_cq, &entry, 1, nullptr, 5000));
	before = cpu_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 400));
	EXPECT_LT(cpu_ms() - before, 200);
	char in[8];
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	ASSERT_EQ(1, fi_cq_sread(pair.server_cq, &entry, 1, nullptr, 5000));
	EXPECT_STREQ("pending", in);

	uint32_t event;
	fi_eq_cm_entry cm;
	before = cpu_ms();
	EXPECT_EQ(-FI_EAGAIN, fi_eq_sread(pair.server_eq, &event, &cm, sizeof(cm), 400, 0));
	EXPECT_LT(cpu_ms() - before, 200);
}

TEST_F(TcpMsg, LargeMessageArrivesIntact)
{
	std::vector<uint32_t> out(4 << 20), in(4 << 20);
	std::iota(out.begin(), out.end(), 7);
	ASSERT_EQ(0, fi_recv(pair.server, in.data(), in.size() * 4, nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_send(pair.client, out.data(), out.size() * 4, nullptr, 0, nullptr));
	ASSERT_EQ(1, pair.wait_cq(pair.server_cq, &entry, nullptr, 20000));
	EXPECT_EQ(out.size() * 4, entry.len);
	EXPECT_TRUE(out == in);
}

// An inject with nothing queued leaves from the stack in one sendmsg; one that the socket
// takes only in part (or not at all) is queued as the rest of its frame. The receiver does
// not read until the socket is full, so the frames around that point are cut anywhere:
// every message must still arrive whole and in order.
TEST_F(TcpMsg, InjectsIntoAFullSocketArriveWholeAndInOrder)
{
	constexpr size_t kLen = 100;
	auto fill = [](uint8_t *msg, uint32_t seq) {
		memcpy(msg, &seq, sizeof(seq));
		for (size_t i = sizeof(seq); i < kLen; i++)
			msg[i] = static_cast<uint8_t>(seq * 7 + i);
	};
	uint32_t posted = 0;
	uint8_t msg[kLen];
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
	for (;;) {
		fill(msg, posted);
		ssize_t ret = fi_inject(pair.client, msg, kLen, 0);
		if (ret == -FI_EAGAIN)
			break; // the socket is full and the queue too
		ASSERT_EQ(0, ret);
		posted++;
		ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the socket never filled";
	}
	ASSERT_GT(posted, 0u);
	constexpr size_t kWindow = 64;
	std::vector<std::array<uint8_t, kLen>> slots(kWindow);
	uint32_t received = 0, next_post = 0;
	auto post = [&] {
		auto &slot = slots[next_post % kWindow];
		ASSERT_EQ(0, fi_recv(pair.server, slot.data(), kLen, nullptr, 0, slot.data()));
		next_post++;
	};
	for (size_t i = 0; i < kWindow && next_post < posted; i++)
		post();
	while (received < posted) {
		ASSERT_LT(std::chrono::steady_clock::now(), deadline) << received << " of " << posted;
		fi_cq_read(pair.client_cq, &entry, 1); // the sender's queue moves with its reads
		if (fi_cq_read(pair.server_cq, &entry, 1) != 1)
			continue;
		uint8_t expect[kLen];
		fill(expect, received);
		ASSERT_EQ(kLen, entry.len);
		ASSERT_EQ(0, memcmp(entry.op_context, expect, kLen)) << "message " << received;
		received++;
		if (next_post < posted)
			post();
	}
	EXPECT_TRUE(pair.cq_stays_empty(pair.server_cq));
}
