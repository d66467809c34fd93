// The eager send at once over our shm and tcp (prov/util/framed_send_ops.h): rxm hands its
// header and the payload to the core in one call (shm writes them into its ring slots, tcp
// sends them in one sendmsg, keeping the part a full socket did not take) when nothing
// waits before the message; anything else is queued as before. Run over shm;ofi_rxm and
// over tcp;ofi_rxm with every same-host shortcut off (the wire). These tests fail when that
// path loses a tag, remote CQ data or a completion (FI_INJECT, FI_SELECTIVE_COMPLETION), or
// passes messages queued before it (a full ring or socket, larger messages).
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "prov/rxm/rxm_provider.h"
#define COUNT_SENDMSG_COUNTS_ONLY // (rxm_coalesce_test.cpp defines the counting sendmsg)
#include "test/count_sendmsg.h"

#include <gtest/gtest.h>

#include "rxm_test_node.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

namespace {

// An rxm endpoint (rxm_test_node.h) that keeps every completion and counts the errors.
struct Side : rxm_test::RdmNode {
	Side(fi_info *info, uint64_t tx_bind_flags)
	    : RdmNode(info, {.cq_size = 1024, .cq_bind_flags = tx_bind_flags})
	{
	}
	void poll()
	{
		fi_cq_tagged_entry e[16];
		ssize_t n = fi_cq_read(cq, e, 16);
		for (ssize_t i = 0; i < n; i++)
			done.push_back(e[i]);
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(cq, &err, 0) == 1)
				errors++;
		}
	}

	std::vector<fi_cq_tagged_entry> done;
	int errors = 0;
};

// The provider's parameters, read at its start; this test program links it statically.
rxm::RxmParams &params() { return const_cast<rxm::RxmParams &>(rxm::params()); }

class RxmShmSend : public ::testing::TestWithParam<const char *> {
protected:
	void SetUp() override
	{
		// Over tcp: the wire (FI_OFI_RXM_USE_SHM=0 FI_OFI_RXM_USE_CMA=0).
		saved_ = params();
		params().use_shm = false;
		params().use_cma = false;
		params().use_cma_set = true;
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_TAGGED | FI_MSG;
		hints->fabric_attr->prov_name = strdup(GetParam());
		bool tcp = strncmp(GetParam(), "tcp", 3) == 0;
		int ret = fi_getinfo(FI_VERSION(1, 17), tcp ? "127.0.0.1" : nullptr, nullptr,
				     tcp ? FI_SOURCE : 0, hints, &info);
		fi_freeinfo(hints);
		if (ret)
			GTEST_SKIP() << "no " << GetParam() << ": " << fi_strerror(-ret);
	}
	void TearDown() override
	{
		a.reset();
		b.reset();
		fi_freeinfo(info);
		params() = saved_;
	}
	rxm::RxmParams saved_;
	void open(uint64_t a_tx_bind_flags = 0)
	{
		a = std::make_unique<Side>(info, a_tx_bind_flags);
		b = std::make_unique<Side>(info, 0);
		to_b = a->insert(*b);
		b->insert(*a);
	}
	// Both sides polled (rxm_test::poll_until) until each has this many completions.
	bool poll_until(size_t a_done, size_t b_done,
			std::chrono::milliseconds limit = std::chrono::seconds(10))
	{
		return rxm_test::poll_until<Side>(
			{a.get(), b.get()},
			[&] {
				return a->done.size() + a->errors >= a_done &&
				       b->done.size() + b->errors >= b_done;
			},
			limit);
	}

	fi_info *info = nullptr;
	std::unique_ptr<Side> a, b;
	fi_addr_t to_b = FI_ADDR_NOTAVAIL;
};

TEST_P(RxmShmSend, TagsRemoteDataAndCompletionsOfSmallSends)
{
	open();
	uint64_t in[3] = {};
	int rctx[3], sctx[3];
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, fi_trecv(b->ep, &in[i], sizeof(in[i]), nullptr, FI_ADDR_UNSPEC,
				      100 + i, 0, &rctx[i]));
	uint64_t v0 = 0x1111, v1 = 0x2222, v2 = 0x3333;
	ASSERT_EQ(0, fi_tsenddata(a->ep, &v0, sizeof(v0), nullptr, 0xabcULL, to_b, 100, &sctx[0]));
	ASSERT_EQ(0, fi_tinjectdata(a->ep, &v1, sizeof(v1), 0xdefULL, to_b, 101));
	v1 = 0; // inject: the buffer is free at once
	ASSERT_EQ(0, fi_tsend(a->ep, &v2, sizeof(v2), nullptr, to_b, 102, &sctx[2]));
	ASSERT_TRUE(poll_until(2, 3));
	ASSERT_EQ(0, a->errors + b->errors);
	ASSERT_EQ(3u, b->done.size());
	uint64_t want[3] = {0x1111, 0x2222, 0x3333};
	for (int i = 0; i < 3; i++) {
		const fi_cq_tagged_entry &e = b->done[i];
		EXPECT_EQ(&rctx[i], e.op_context) << i;
		EXPECT_EQ(uint64_t(100 + i), e.tag) << i;
		EXPECT_EQ(sizeof(uint64_t), e.len) << i;
		EXPECT_EQ(want[i], in[i]) << i;
		uint64_t flags = FI_RECV | FI_TAGGED | (i < 2 ? FI_REMOTE_CQ_DATA : 0);
		EXPECT_EQ(flags, e.flags) << i;
		if (i < 2) {
			EXPECT_EQ(i ? 0xdefULL : 0xabcULL, e.data) << i;
		}
	}
	// The inject has no entry; the two sends one each.
	EXPECT_FALSE(poll_until(3, 3, std::chrono::milliseconds(100)));
	ASSERT_EQ(2u, a->done.size());
	EXPECT_EQ(&sctx[0], a->done[0].op_context);
	EXPECT_EQ(&sctx[2], a->done[1].op_context);
	EXPECT_EQ(uint64_t(FI_SEND | FI_TAGGED), a->done[0].flags);
}

TEST_P(RxmShmSend, SelectiveCompletionWritesOnlyWhatIsAskedFor)
{
	open(FI_SELECTIVE_COMPLETION);
	char in[4][8] = {};
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, fi_trecv(b->ep, in[i], sizeof(in[i]), nullptr, FI_ADDR_UNSPEC, 7, 0,
				      nullptr));
	int ctx[4];
	char out[] = "abcdefg";
	iovec iov{out, sizeof(out)};
	fi_msg_tagged msg{};
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	msg.addr = to_b;
	msg.tag = 7;
	msg.context = &ctx[0];
	ASSERT_EQ(0, fi_tsendmsg(a->ep, &msg, 0)); // no FI_COMPLETION: no entry
	msg.context = &ctx[1];
	ASSERT_EQ(0, fi_tsendmsg(a->ep, &msg, FI_COMPLETION));
	ASSERT_EQ(0, fi_tsend(a->ep, out, sizeof(out), nullptr, to_b, 7, &ctx[2])); // op_flags
	msg.context = &ctx[3];
	ASSERT_EQ(0, fi_tsendmsg(a->ep, &msg, FI_COMPLETION | FI_REMOTE_CQ_DATA));
	ASSERT_TRUE(poll_until(2, 4));
	EXPECT_FALSE(poll_until(3, 4, std::chrono::milliseconds(100)));
	ASSERT_EQ(2u, a->done.size());
	EXPECT_EQ(&ctx[1], a->done[0].op_context);
	EXPECT_EQ(&ctx[3], a->done[1].op_context);
	ASSERT_EQ(4u, b->done.size());
	EXPECT_EQ(uint64_t(FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA), b->done[3].flags);
	for (int i = 0; i < 4; i++)
		EXPECT_STREQ("abcdefg", in[i]) << i;
}

TEST_P(RxmShmSend, SmallSendsKeepTheirPlaceBehindAFullRingAndLargerMessages)
{
	open();
	// The receiver progresses only when the sender runs out of room: its ring fills, later
	// small sends queue behind the ones that did not fit, and larger messages (several
	// slots, or more than an eager buffer) go queued between them.
	constexpr size_t kCount = 300, kMax = 20000;
	std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(kMax));
	std::vector<std::vector<uint8_t>> out(kCount);
	for (size_t i = 0; i < kCount; i++) {
		size_t len = i % 11 == 5 ? kMax : i % 7 == 3 ? 3000 : 8;
		out[i].resize(len);
		for (size_t j = 0; j < len; j++)
			out[i][j] = static_cast<uint8_t>(i * 31 + j);
		ASSERT_EQ(0, fi_trecv(b->ep, in[i].data(), kMax, nullptr, FI_ADDR_UNSPEC, 9, 0,
				      in[i].data()));
	}
	for (size_t i = 0; i < kCount; i++) {
		ssize_t ret;
		while ((ret = fi_tsend(a->ep, out[i].data(), out[i].size(), nullptr, to_b, 9,
				       out[i].data())) == -FI_EAGAIN)
			poll_until(a->done.size() + 1, 0, std::chrono::milliseconds(1));
		ASSERT_EQ(0, ret) << i;
	}
	ASSERT_TRUE(poll_until(kCount, kCount)) << a->done.size() << " " << b->done.size();
	ASSERT_EQ(0, a->errors + b->errors);
	ASSERT_EQ(kCount, b->done.size());
	for (size_t i = 0; i < kCount; i++) {
		ASSERT_EQ(in[i].data(), b->done[i].op_context) << i;
		ASSERT_EQ(out[i].size(), b->done[i].len) << i;
		ASSERT_EQ(0, memcmp(out[i].data(), in[i].data(), out[i].size())) << "message " << i;
	}
}

// Over tcp, every sendmsg taking at most 100 bytes (a socket with little room): a message
// sent at once goes in part and its rest waits in tcp (the caller's buffer is free at once),
// the next one queues behind it; everything arrives intact, in order, with one completion
// per send.
TEST_P(RxmShmSend, SendsTheSocketTakesInPartKeepTheirOrder)
{
	if (strncmp(GetParam(), "tcp", 3) != 0)
		GTEST_SKIP() << "tcp only";
	open();
	constexpr size_t kCount = 60, kMax = 5000;
	std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(kMax));
	std::vector<std::vector<uint8_t>> out(kCount);
	for (size_t i = 0; i < kCount; i++) {
		size_t len = i % 5 == 2 ? 4000 : i % 3 == 1 ? 700 : 8 + i;
		out[i].resize(len);
		for (size_t j = 0; j < len; j++)
			out[i][j] = static_cast<uint8_t>(i * 17 + j);
		ASSERT_EQ(0, fi_trecv(b->ep, in[i].data(), kMax, nullptr, FI_ADDR_UNSPEC, 3, 0,
				      in[i].data()));
	}
	ASSERT_EQ(0, fi_tsend(a->ep, out[0].data(), out[0].size(), nullptr, to_b, 3,
			      out[0].data())); // connects
	ASSERT_TRUE(poll_until(1, 1));
	test_count::sendmsg_cap = 100;
	for (size_t i = 1; i < kCount; i++) {
		ssize_t ret;
		while ((ret = fi_tsend(a->ep, out[i].data(), out[i].size(), nullptr, to_b, 3,
				       out[i].data())) == -FI_EAGAIN)
			poll_until(a->done.size() + 1, 0, std::chrono::milliseconds(1));
		ASSERT_EQ(0, ret) << i;
		// Until it completes: with nothing queued the next one goes at once (in part),
		// the one after it queues behind the rest.
		ASSERT_TRUE(poll_until(i + 1, 0)) << i;
	}
	bool all = poll_until(kCount, kCount);
	test_count::sendmsg_cap = 0;
	ASSERT_TRUE(all) << a->done.size() << " " << b->done.size();
	ASSERT_EQ(0, a->errors + b->errors);
	ASSERT_EQ(kCount, b->done.size());
	ASSERT_EQ(kCount, a->done.size());
	// Send completions may come in any order (comp_order NONE): one per send.
	std::vector<void *> sent;
	for (const fi_cq_tagged_entry &e : a->done)
		sent.push_back(e.op_context);
	std::sort(sent.begin(), sent.end());
	EXPECT_EQ(sent.end(), std::unique(sent.begin(), sent.end()));
	for (size_t i = 0; i < kCount; i++) {
		EXPECT_TRUE(std::binary_search(sent.begin(), sent.end(), out[i].data())) << i;
		ASSERT_EQ(in[i].data(), b->done[i].op_context) << i;
		ASSERT_EQ(out[i].size(), b->done[i].len) << i;
		ASSERT_EQ(0, memcmp(out[i].data(), in[i].data(), out[i].size())) << "message " << i;
	}
}

INSTANTIATE_TEST_SUITE_P(Core, RxmShmSend, ::testing::Values("shm;ofi_rxm", "tcp;ofi_rxm"),
			 [](const ::testing::TestParamInfo<const char *> &p) {
				 return std::string(p.param).substr(0, 3);
			 });

} // namespace
