// The small receive over our shm (shm;ofi_rxm): an eager message in shm's ring is decoded,
// matched, copied and completed in one step when a plain posted receive takes it
// (take_expected_eager, rxm_recv_inline.h); everything else takes the general path. These
// tests fail when that step matches the wrong receive (order, tag and ignore bits), loses
// the source (fi_cq_readfrom), remote CQ data, the context or the FI_MSG/FI_TAGGED flags,
// writes an entry FI_SELECTIVE_COMPLETION leaves out, or copies a message that does not fit
// (FI_ETRUNC), and when messages that arrived before their receive lose their order.
// Each runs with the default threading and with FI_THREAD_DOMAIN.
#include "rxm_test_node.h"

#include <rdma/fi_tagged.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Received {
	fi_cq_tagged_entry entry;
	fi_addr_t source;
};

// An rxm endpoint (rxm_test_node.h) that keeps every completion with its source
// (fi_cq_readfrom), and every error entry.
struct Side : rxm_test::RdmNode {
	Side(fi_info *info, uint64_t bind_flags)
	    : RdmNode(info, {.cq_size = 1024, .cq_bind_flags = bind_flags})
	{
	}
	void poll()
	{
		fi_cq_tagged_entry e[16];
		fi_addr_t src[16];
		ssize_t n = fi_cq_readfrom(cq, e, 16, src);
		for (ssize_t i = 0; i < n; i++)
			done.push_back({e[i], src[i]});
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(cq, &err, 0) == 1)
				errors.push_back(err);
		}
	}

	std::vector<Received> done;
	std::vector<fi_cq_err_entry> errors;
};

class RxmShmRecv : public ::testing::TestWithParam<fi_threading> {
protected:
	void SetUp() override
	{
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_TAGGED | FI_MSG | FI_SOURCE;
		hints->domain_attr->threading = GetParam();
		hints->fabric_attr->prov_name = strdup("shm;ofi_rxm");
		int ret = fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info);
		fi_freeinfo(hints);
		if (ret)
			GTEST_SKIP() << "no shm;ofi_rxm: " << fi_strerror(-ret);
	}
	void TearDown() override
	{
		a.reset();
		b.reset();
		fi_freeinfo(info);
	}
	void open(uint64_t b_rx_bind_flags = 0)
	{
		a = std::make_unique<Side>(info, 0);
		b = std::make_unique<Side>(info, b_rx_bind_flags);
		to_b = a->insert(*b);
		from_a = b->insert(*a);
	}
	// Both sides polled (rxm_test::poll_until) until each has this many completions.
	bool poll_until(size_t a_done, size_t b_done,
			std::chrono::milliseconds limit = std::chrono::seconds(10))
	{
		return rxm_test::poll_until<Side>(
			{a.get(), b.get()},
			[&] {
				return a->done.size() + a->errors.size() >= a_done &&
				       b->done.size() + b->errors.size() >= b_done;
			},
			limit);
	}
	void tsend(uint64_t value, uint64_t tag, bool data = false, uint64_t cq_data = 0)
	{
		ssize_t ret = data ? fi_tsenddata(a->ep, &value, sizeof(value), nullptr, cq_data,
						  to_b, tag, nullptr)
				   : fi_tsend(a->ep, &value, sizeof(value), nullptr, to_b, tag,
					      nullptr);
		ASSERT_EQ(0, ret);
		sent++;
		ASSERT_TRUE(poll_until(sent, 0)); // the send's buffer is on the stack
	}

	fi_info *info = nullptr;
	std::unique_ptr<Side> a, b;
	fi_addr_t to_b = FI_ADDR_NOTAVAIL, from_a = FI_ADDR_NOTAVAIL;
	size_t sent = 0;
};

// Each message takes the oldest receive whose tag (under its ignore bits) accepts it, not
// the oldest receive: the head of the posted queue is not always the one.
TEST_P(RxmShmRecv, MatchesByTagAndIgnoreInPostingOrder)
{
	open();
	uint64_t in[5] = {};
	int ctx[5];
	const uint64_t tags[5] = {5, 7, 0x100, 7, 0x100};
	const uint64_t ignore[5] = {0, 0, 0xff, 0, 0xff};
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(0, fi_trecv(b->ep, &in[i], sizeof(in[i]), nullptr, FI_ADDR_UNSPEC, tags[i],
				      ignore[i], &ctx[i]));
	// tag 7 -> 1, 0x1ab -> 2, 7 -> 3, 0x1cd -> 4, 5 -> 0
	const uint64_t send_tags[5] = {7, 0x1ab, 7, 0x1cd, 5};
	const int takes[5] = {1, 2, 3, 4, 0};
	for (int i = 0; i < 5; i++)
		tsend(1000 + i, send_tags[i]);
	ASSERT_TRUE(poll_until(5, 5));
	ASSERT_EQ(0u, b->errors.size());
	ASSERT_EQ(5u, b->done.size());
	for (int i = 0; i < 5; i++) {
		const fi_cq_tagged_entry &e = b->done[i].entry;
		EXPECT_EQ(&ctx[takes[i]], e.op_context) << i;
		EXPECT_EQ(send_tags[i], e.tag) << i;
		EXPECT_EQ(uint64_t(1000 + i), in[takes[i]]) << i;
		EXPECT_EQ(&in[takes[i]], e.buf) << i;
		EXPECT_EQ(sizeof(uint64_t), e.len) << i;
		EXPECT_EQ(uint64_t(FI_RECV | FI_TAGGED), e.flags) << i;
	}
}

TEST_P(RxmShmRecv, SourceRemoteDataAndUntaggedFlags)
{
	open();
	uint64_t in[3] = {};
	int ctx[3];
	ASSERT_EQ(0, fi_trecv(b->ep, &in[0], sizeof(in[0]), nullptr, FI_ADDR_UNSPEC, 1, 0,
			      &ctx[0]));
	ASSERT_EQ(0, fi_trecv(b->ep, &in[1], sizeof(in[1]), nullptr, FI_ADDR_UNSPEC, 2, 0,
			      &ctx[1]));
	ASSERT_EQ(0, fi_recv(b->ep, &in[2], sizeof(in[2]), nullptr, FI_ADDR_UNSPEC, &ctx[2]));
	tsend(11, 1, true, 0x1234567890ULL);
	tsend(22, 2);
	uint64_t v = 33;
	ASSERT_EQ(0, fi_senddata(a->ep, &v, sizeof(v), nullptr, 0xfeedULL, to_b, nullptr));
	ASSERT_TRUE(poll_until(3, 3));
	ASSERT_EQ(0u, b->errors.size());
	ASSERT_EQ(3u, b->done.size());
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(&ctx[i], b->done[i].entry.op_context) << i;
		EXPECT_EQ(from_a, b->done[i].source) << i;
		EXPECT_EQ(uint64_t(11 * (i + 1)), in[i]) << i;
	}
	EXPECT_EQ(uint64_t(FI_RECV | FI_TAGGED | FI_REMOTE_CQ_DATA), b->done[0].entry.flags);
	EXPECT_EQ(0x1234567890ULL, b->done[0].entry.data);
	EXPECT_EQ(uint64_t(FI_RECV | FI_TAGGED), b->done[1].entry.flags);
	EXPECT_EQ(uint64_t(FI_RECV | FI_MSG | FI_REMOTE_CQ_DATA), b->done[2].entry.flags);
	EXPECT_EQ(0xfeedULL, b->done[2].entry.data);
}

// A message longer than its receive: an FI_ETRUNC error entry with what did not fit, and
// only what fits is written; the next message takes the next receive as usual.
TEST_P(RxmShmRecv, TruncatedMessageGivesAnErrorEntry)
{
	open();
	uint8_t small[4];
	memset(small, 0xee, sizeof(small));
	uint8_t guard = 0xee; // after small[]: must stay
	uint64_t next = 0;
	int ctx[2];
	ASSERT_EQ(0, fi_trecv(b->ep, small, 3, nullptr, FI_ADDR_UNSPEC, 4, 0, &ctx[0]));
	ASSERT_EQ(0, fi_trecv(b->ep, &next, sizeof(next), nullptr, FI_ADDR_UNSPEC, 4, 0,
			      &ctx[1]));
	tsend(0x0807060504030201ULL, 4, true, 77);
	tsend(0x55, 4);
	ASSERT_TRUE(poll_until(2, 2));
	ASSERT_EQ(1u, b->errors.size());
	const fi_cq_err_entry &err = b->errors[0];
	EXPECT_EQ(&ctx[0], err.op_context);
	EXPECT_EQ(FI_ETRUNC, err.err);
	EXPECT_EQ(5u, err.olen);
	EXPECT_EQ(4u, err.tag);
	EXPECT_EQ(0, memcmp(small, "\x01\x02\x03\xee", 4));
	EXPECT_EQ(0xee, guard);
	ASSERT_EQ(1u, b->done.size());
	EXPECT_EQ(&ctx[1], b->done[0].entry.op_context);
	EXPECT_EQ(0x55u, next);
}

// Messages that arrived before any receive wait, in order, with their data and source.
TEST_P(RxmShmRecv, UnexpectedMessagesThenPostedReceives)
{
	open();
	tsend(1, 9, true, 101);
	tsend(2, 9, true, 102);
	tsend(3, 8);
	poll_until(sent, 100, std::chrono::milliseconds(200)); // b takes them in, unexpected
	ASSERT_EQ(0u, b->done.size());
	uint64_t in[3] = {};
	int ctx[3];
	ASSERT_EQ(0, fi_trecv(b->ep, &in[0], sizeof(in[0]), nullptr, FI_ADDR_UNSPEC, 8, 0,
			      &ctx[0]));
	ASSERT_EQ(0, fi_trecv(b->ep, &in[1], sizeof(in[1]), nullptr, FI_ADDR_UNSPEC, 9, 0,
			      &ctx[1]));
	ASSERT_EQ(0, fi_trecv(b->ep, &in[2], sizeof(in[2]), nullptr, FI_ADDR_UNSPEC, 9, 0,
			      &ctx[2]));
	ASSERT_TRUE(poll_until(sent, 3));
	ASSERT_EQ(3u, b->done.size());
	EXPECT_EQ(3u, in[0]);
	EXPECT_EQ(1u, in[1]);
	EXPECT_EQ(2u, in[2]);
	EXPECT_EQ(101u, b->done[1].entry.data);
	EXPECT_EQ(102u, b->done[2].entry.data);
	for (int i = 0; i < 3; i++) {
		EXPECT_EQ(&ctx[i], b->done[i].entry.op_context) << i;
		EXPECT_EQ(from_a, b->done[i].source) << i;
	}
}

// FI_SELECTIVE_COMPLETION on the receive side: only receives posted with FI_COMPLETION
// report, also when the message carried remote CQ data.
TEST_P(RxmShmRecv, SelectiveCompletionReportsOnlyWhatIsAskedFor)
{
	open(FI_SELECTIVE_COMPLETION);
	uint64_t in[3] = {};
	int ctx[3];
	for (int i = 0; i < 3; i++) {
		iovec iov{&in[i], sizeof(in[i])};
		fi_msg_tagged msg{};
		msg.msg_iov = &iov;
		msg.iov_count = 1;
		msg.addr = FI_ADDR_UNSPEC;
		msg.tag = 6;
		msg.context = &ctx[i];
		ASSERT_EQ(0, fi_trecvmsg(b->ep, &msg, i == 1 ? FI_COMPLETION : 0));
	}
	tsend(1, 6, true, 5);
	tsend(2, 6);
	tsend(3, 6, true, 7);
	ASSERT_TRUE(poll_until(sent, 1));
	EXPECT_FALSE(poll_until(sent, 2, std::chrono::milliseconds(100)));
	ASSERT_EQ(1u, b->done.size());
	EXPECT_EQ(&ctx[1], b->done[0].entry.op_context);
	EXPECT_EQ(1u, in[0]);
	EXPECT_EQ(2u, in[1]);
	EXPECT_EQ(3u, in[2]);
}

INSTANTIATE_TEST_SUITE_P(Threading, RxmShmRecv,
			 ::testing::Values(FI_THREAD_SAFE, FI_THREAD_DOMAIN),
			 [](const ::testing::TestParamInfo<fi_threading> &p) {
				 return p.param == FI_THREAD_SAFE ? std::string("ThreadSafe")
								  : std::string("ThreadDomain");
			 });

} // namespace
