// Messages through the rings: every send/recv form, remote CQ data, inject, messages larger
// than the ring, truncation, receives posted late (backpressure), cancel, and blocking reads
// woken by the peer's doorbell.
#include "prov/shm/shm_ring.h"
#include "prov/shm/test/shm_test_pair.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <chrono>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

namespace {

using shm_test::ShmPair;

std::vector<uint8_t> pattern(size_t len, uint8_t seed)
{
	std::vector<uint8_t> v(len);
	for (size_t i = 0; i < len; i++)
		v[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 12));
	return v;
}

class ShmMsg : public ::testing::Test {
protected:
	void SetUp() override
	{
		ASSERT_TRUE(p.open());
		ASSERT_TRUE(p.connect());
	}
	// Waits for one completion on `cq`, progressing both sides meanwhile.
	fi_cq_data_entry completion(fid_cq *cq)
	{
		fi_cq_data_entry e{};
		fi_cq_err_entry err{};
		ssize_t ret = p.wait_cq(cq, &e, &err);
		EXPECT_EQ(1, ret) << fi_strerror(static_cast<int>(-ret)) << " err " << err.err;
		return e;
	}
	ShmPair p;
};

TEST_F(ShmMsg, SendRecvSizes)
{
	for (size_t len : {size_t(0), size_t(1), size_t(64), size_t(4064), size_t(4065),
			   size_t(65536), size_t(1) << 20}) {
		std::vector<uint8_t> out = pattern(len, static_cast<uint8_t>(len)), in(len + 1, 0);
		ASSERT_EQ(0, fi_recv(p.server, in.data(), in.size(), nullptr, 0, &in));
		ASSERT_EQ(0, fi_send(p.client, out.data(), len, nullptr, 0, &out));
		fi_cq_data_entry tx = {}, rx = {};
		// Both sides progress while the client's CQ is read (one domain).
		rx = completion(p.server_cq);
		tx = completion(p.client_cq);
		EXPECT_EQ(&out, tx.op_context);
		EXPECT_EQ(uint64_t(FI_SEND | FI_MSG), tx.flags);
		EXPECT_EQ(&in, rx.op_context);
		EXPECT_EQ(uint64_t(FI_RECV | FI_MSG), rx.flags);
		EXPECT_EQ(len, rx.len);
		// (std::equal: at 0 bytes out.data() is null, which memcmp must not get.)
		EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin())) << len;
	}
}

TEST_F(ShmMsg, VectorsAndRemoteData)
{
	std::vector<uint8_t> a = pattern(3000, 1), b = pattern(9000, 2);
	iovec out[2] = {{a.data(), a.size()}, {b.data(), b.size()}};
	std::vector<uint8_t> x(5000), y(7000);
	iovec in[2] = {{x.data(), x.size()}, {y.data(), y.size()}};
	ASSERT_EQ(0, fi_recvv(p.server, in, nullptr, 2, 0, nullptr));
	ASSERT_EQ(0, fi_sendv(p.client, out, nullptr, 2, 0, nullptr));
	fi_cq_data_entry rx = completion(p.server_cq);
	completion(p.client_cq);
	EXPECT_EQ(12000u, rx.len);
	std::vector<uint8_t> sent(a), got(x);
	sent.insert(sent.end(), b.begin(), b.end());
	got.insert(got.end(), y.begin(), y.end());
	EXPECT_EQ(sent, got);

	char buf[16] = {};
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_senddata(p.client, "data", 4, nullptr, 0xfeedbeefcafe, 0, nullptr));
	rx = completion(p.server_cq);
	completion(p.client_cq);
	EXPECT_EQ(uint64_t(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA), rx.flags);
	EXPECT_EQ(0xfeedbeefcafeu, rx.data);
	EXPECT_STREQ("data", buf);

	fi_msg msg{};
	iovec iov{const_cast<char *>("msg"), 3};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.data = 42;
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_sendmsg(p.client, &msg, FI_REMOTE_CQ_DATA | FI_COMPLETION));
	rx = completion(p.server_cq);
	completion(p.client_cq);
	EXPECT_EQ(42u, rx.data);
	EXPECT_EQ(-FI_EBADFLAGS, fi_sendmsg(p.client, &msg, FI_TAGGED));
}

TEST_F(ShmMsg, InjectNeedsNoCompletion)
{
	char buf[16] = {};
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	char tmp[] = "inject";
	ASSERT_EQ(0, fi_inject(p.client, tmp, sizeof(tmp), 0));
	memset(tmp, 0, sizeof(tmp)); // the data left with the call
	fi_cq_data_entry rx = completion(p.server_cq);
	EXPECT_STREQ("inject", buf);
	EXPECT_EQ(7u, rx.len);
	EXPECT_TRUE(p.cq_stays_empty(p.client_cq, 50));
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_injectdata(p.client, "x", 1, 7, 0));
	rx = completion(p.server_cq);
	EXPECT_EQ(7u, rx.data);
	std::vector<uint8_t> big(8192);
	EXPECT_EQ(-FI_EINVAL, fi_inject(p.client, big.data(), big.size(), 0));
}

TEST_F(ShmMsg, TruncationReportsWhatWasCut)
{
	std::vector<uint8_t> out = pattern(10000, 3), in(6000);
	ASSERT_EQ(0, fi_recv(p.server, in.data(), in.size(), nullptr, 0, &in));
	ASSERT_EQ(0, fi_send(p.client, out.data(), out.size(), nullptr, 0, nullptr));
	fi_cq_data_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(-FI_EAVAIL, p.wait_cq(p.server_cq, &e, &err));
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(4000u, err.olen);
	EXPECT_EQ(0, memcmp(in.data(), out.data(), in.size()));
	completion(p.client_cq);
	// The stream goes on with the next message.
	ASSERT_EQ(0, fi_recv(p.server, in.data(), in.size(), nullptr, 0, nullptr));
	ASSERT_EQ(0, fi_send(p.client, "next", 4, nullptr, 0, nullptr));
	EXPECT_EQ(4u, completion(p.server_cq).len);
}

// Every slot position of the ring as the start of a message that takes the whole ring (it
// wraps there), each reached by a message that exactly fills the slots before the wrap (or
// moves within the lap): each slot's seq must say ready at every position and lap.
TEST_F(ShmMsg, WholeRingMessagesFromEveryPosition)
{
	uint32_t pos = 0; // where the client's next message starts
	auto send_slots = [&](uint32_t slots, uint8_t seed) {
		size_t len = size_t(slots) * shm::kSlotPayload;
		std::vector<uint8_t> out = pattern(len, seed), in(len, 0);
		ASSERT_EQ(0, fi_recv(p.server, in.data(), in.size(), nullptr, 0, nullptr));
		ASSERT_EQ(0, fi_send(p.client, out.data(), len, nullptr, 0, nullptr));
		EXPECT_EQ(len, completion(p.server_cq).len);
		completion(p.client_cq);
		ASSERT_TRUE(out == in) << "slots " << slots << " from " << pos;
		pos = (pos + slots) % shm::kSlots;
	};
	for (uint32_t start = 0; start < shm::kSlots; start++) {
		if (pos != start)
			send_slots(pos < start ? start - pos : shm::kSlots - pos + start,
				   static_cast<uint8_t>(start));
		ASSERT_EQ(start, pos);
		send_slots(shm::kSlots, static_cast<uint8_t>(start + 1));
		if (HasFatalFailure())
			return;
	}
}

TEST_F(ShmMsg, ManySendsWaitForLateReceives)
{
	// More bytes than the ring holds, sent before any receive: the rest waits in the queue.
	constexpr int kCount = 40;
	std::vector<std::vector<uint8_t>> out;
	for (int i = 0; i < kCount; i++) {
		out.push_back(pattern(20000, static_cast<uint8_t>(i)));
		ASSERT_EQ(0, fi_send(p.client, out.back().data(), out.back().size(), nullptr, 0,
				     nullptr));
	}
	EXPECT_TRUE(p.cq_stays_empty(p.server_cq, 20));
	std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(20000));
	for (int i = 0; i < kCount; i++) {
		ASSERT_EQ(0, fi_recv(p.server, in[i].data(), in[i].size(), nullptr, 0, nullptr));
		completion(p.server_cq);
		EXPECT_EQ(out[i], in[i]) << i;
	}
	for (int i = 0; i < kCount; i++)
		completion(p.client_cq);
}

TEST_F(ShmMsg, CancelReturnsTheReceive)
{
	char buf[8];
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, buf));
	ASSERT_EQ(0, fi_cancel(&p.server->fid, buf));
	fi_cq_data_entry e;
	fi_cq_err_entry err{};
	ASSERT_EQ(-FI_EAVAIL, p.wait_cq(p.server_cq, &e, &err));
	EXPECT_EQ(FI_ECANCELED, err.err);
	EXPECT_EQ(buf, err.op_context);
	EXPECT_EQ(-FI_ENOENT, fi_cancel(&p.server->fid, buf));
	char other[8] = {};
	ASSERT_EQ(0, fi_recv(p.server, other, sizeof(other), nullptr, 0, other));
	ASSERT_EQ(0, fi_send(p.client, "abc", 4, nullptr, 0, nullptr));
	EXPECT_EQ(other, completion(p.server_cq).op_context);
	EXPECT_STREQ("abc", other);
}

TEST_F(ShmMsg, BadArguments)
{
	char buf[8];
	iovec iov[5] = {};
	EXPECT_EQ(-FI_EINVAL, fi_sendv(p.client, iov, nullptr, 5, 0, nullptr));
	EXPECT_EQ(-FI_EINVAL, fi_recv(p.server, nullptr, 8, nullptr, 0, nullptr));
	EXPECT_EQ(-FI_EINVAL, fi_sendmsg(p.client, nullptr, 0));
	(void)buf;
}

// sread on an FI_WAIT_FD CQ sleeps (no spinning) and the peer's doorbell wakes it.
TEST(ShmWait, SreadWakesOnTheDoorbell)
{
	ShmPair p;
	ASSERT_TRUE(p.open(FI_WAIT_FD));
	ASSERT_TRUE(p.connect());
	char buf[8] = {};
	ASSERT_EQ(0, fi_recv(p.server, buf, sizeof(buf), nullptr, 0, nullptr));
	std::thread sender([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(100));
		EXPECT_EQ(0, fi_send(p.client, "wake", 5, nullptr, 0, nullptr));
	});
	fi_cq_data_entry e{};
	auto start = std::chrono::steady_clock::now();
	clock_t cpu_start = clock();
	ssize_t ret = fi_cq_sread(p.server_cq, &e, 1, nullptr, 5000);
	auto waited = std::chrono::steady_clock::now() - start;
	double cpu_ms = double(clock() - cpu_start) * 1000.0 / CLOCKS_PER_SEC;
	sender.join();
	ASSERT_EQ(1, ret);
	EXPECT_STREQ("wake", buf);
	EXPECT_LT(waited, std::chrono::milliseconds(2000));
	// Sleeping, not polling: far less CPU than wall time (the sender thread counts too).
	EXPECT_LT(cpu_ms, 60.0);
	// Timeout with nothing coming.
	EXPECT_EQ(-FI_EAGAIN, fi_cq_sread(p.server_cq, &e, 1, nullptr, 50));
}

} // namespace
