// Framed sends (prov/shm/shm_send_ops.h): the header and the payload pieces arrive as one
// message (in one slot or several), in order with the plain path's; the send completes as
// an inject (no CQ entry, a bound counter counts it); whatever cannot go at once (a ring
// without room for all its slots, a connection not up) is -FI_EAGAIN with nothing sent,
// and a fid that is not a shm endpoint is -FI_EINVAL.
#include "prov/shm/shm_ring.h"
#include "prov/shm/shm_send_ops.h"
#include "prov/shm/test/shm_test_pair.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

using shm_test::ShmPair;

class ShmSendOps : public ::testing::Test {
protected:
	void SetUp() override
	{
		p.before_client_enable = [this](fid_ep *ep) {
			fi_cntr_attr attr{};
			attr.events = FI_CNTR_EVENTS_COMP;
			if (!sent) {
				ASSERT_EQ(0, fi_cntr_open(p.domain, &attr, &sent, nullptr));
			}
			ASSERT_EQ(0, fi_ep_bind(ep, &sent->fid, FI_SEND));
		};
		ASSERT_TRUE(p.open());
		ASSERT_TRUE(p.connect());
		void *o = nullptr;
		ASSERT_EQ(0, fi_open_ops(&p.domain->fid, OFI_SHM_SEND_OPS_NAME, 0, &o, nullptr));
		ops = static_cast<const ofi_framed_send_ops *>(o);
		ASSERT_GE(ops->size, sizeof(ofi_framed_send_ops));
	}
	void TearDown() override
	{
		if (p.client)
			fi_close(&p.client->fid);
		p.client = nullptr;
		if (sent)
			fi_close(&sent->fid);
	}
	ssize_t framed(const std::string &hdr, const std::vector<std::string> &pieces)
	{
		std::vector<iovec> iov;
		size_t len = 0;
		for (const std::string &s : pieces) {
			iov.push_back({const_cast<char *>(s.data()), s.size()});
			len += s.size();
		}
		return ops->inject_framed(p.client, hdr.data(), hdr.size(), iov.data(), iov.size(),
					  len);
	}
	// Posts a receive and waits for its message.
	std::string receive()
	{
		std::vector<char> buf(3 * shm::kSlotSize);
		EXPECT_EQ(0, fi_recv(p.server, buf.data(), buf.size(), nullptr, 0, nullptr));
		fi_cq_data_entry e{};
		fi_cq_err_entry err{};
		EXPECT_EQ(1, p.wait_cq(p.server_cq, &e, &err)) << err.err;
		EXPECT_EQ(uint64_t(FI_RECV | FI_MSG), e.flags); // no remote CQ data
		return std::string(buf.data(), e.len);
	}
	ShmPair p;
	fid_cntr *sent = nullptr;
	const ofi_framed_send_ops *ops = nullptr;
};

TEST_F(ShmSendOps, HeaderAndPiecesArriveAsOneMessageWithoutACompletion)
{
	ASSERT_EQ(0, framed("HDR:", {"abc", "", "defgh"}));
	ASSERT_EQ(0, framed("h", {}));
	EXPECT_EQ("HDR:abcdefgh", receive());
	EXPECT_EQ("h", receive());
	EXPECT_TRUE(p.cq_stays_empty(p.client_cq, 50));
	EXPECT_EQ(2u, fi_cntr_read(sent));
	// The largest that fits one slot, a byte more (two slots), a message over three.
	std::string head(56, 'H');
	std::string body(shm::kSlotPayload - head.size(), 'b');
	ASSERT_EQ(0, framed(head, {body}));
	EXPECT_EQ(head + body, receive());
	ASSERT_EQ(0, framed(head, {body, "x"}));
	EXPECT_EQ(head + body + "x", receive());
	std::string big(10000, 'z');
	for (size_t i = 0; i < big.size(); i++)
		big[i] = static_cast<char>('a' + i % 23);
	ASSERT_EQ(0, framed(head, {"0123", big}));
	EXPECT_EQ(head + "0123" + big, receive());
	EXPECT_EQ(5u, fi_cntr_read(sent));
	// Longer than the ring: never at once.
	std::string huge(shm::kSlots * shm::kSlotPayload, 'x');
	EXPECT_EQ(-FI_EAGAIN, framed("h", {huge}));
	EXPECT_EQ(5u, fi_cntr_read(sent));
}

TEST_F(ShmSendOps, FullRingIsEagainAndOrderHoldsWithThePlainPath)
{
	// Nothing progresses the receiver until a CQ is read: the ring fills.
	uint32_t n = 0;
	ssize_t ret;
	while ((ret = framed("m", {std::to_string(n)})) == 0 && n <= shm::kSlots)
		n++;
	EXPECT_EQ(-FI_EAGAIN, ret);
	EXPECT_EQ(shm::kSlots, n);
	EXPECT_EQ(uint64_t(n), fi_cntr_read(sent));
	// The plain path queues behind the ring; a framed send still may not pass it.
	ASSERT_EQ(0, fi_send(p.client, "queued", 6, nullptr, 0, nullptr));
	EXPECT_EQ(-FI_EAGAIN, framed("m", {"late"}));
	for (uint32_t i = 0; i < n; i++)
		ASSERT_EQ("m" + std::to_string(i), receive());
	EXPECT_EQ("queued", receive());
	fi_cq_data_entry e{};
	EXPECT_EQ(1, p.wait_cq(p.client_cq, &e)); // the queued send's entry, the only one
	EXPECT_EQ(uint64_t(n) + 1, fi_cntr_read(sent));
	EXPECT_TRUE(p.cq_stays_empty(p.client_cq, 20));
	ASSERT_EQ(0, framed("m", {"after"}));
	EXPECT_EQ("mafter", receive());
}

TEST_F(ShmSendOps, AMessageOverSeveralSlotsWaitsForAllOfThem)
{
	std::string two(shm::kSlotPayload + 1, 't');
	// One slot left: a two-slot message does not go (nothing of it), a one-slot one does.
	for (uint32_t i = 0; i + 1 < shm::kSlots; i++)
		ASSERT_EQ(0, framed("m", {std::to_string(i)}));
	EXPECT_EQ(-FI_EAGAIN, framed("", {two}));
	ASSERT_EQ(0, framed("m", {"last"}));
	for (uint32_t i = 0; i + 1 < shm::kSlots; i++)
		ASSERT_EQ("m" + std::to_string(i), receive());
	EXPECT_EQ("mlast", receive());
	ASSERT_EQ(0, framed("", {two}));
	EXPECT_EQ(two, receive());
	EXPECT_EQ(uint64_t(shm::kSlots) + 1, fi_cntr_read(sent));
}

TEST_F(ShmSendOps, BadArgumentsAndUnconnectedEndpoints)
{
	iovec iov{const_cast<char *>("x"), 1};
	EXPECT_EQ(-FI_EINVAL, ops->inject_framed(nullptr, "h", 1, &iov, 1, 1));
	EXPECT_EQ(-FI_EINVAL, ops->inject_framed(reinterpret_cast<fid_ep *>(p.pep), "h", 1, &iov,
						 1, 1));
	EXPECT_EQ(-FI_EINVAL, ops->inject_framed(p.client, nullptr, 1, &iov, 1, 1));
	EXPECT_EQ(-FI_EINVAL, ops->inject_framed(p.client, "h", 1, nullptr, 1, 1));
	EXPECT_EQ(-FI_EINVAL, ops->inject_framed(p.client, "h", 1, &iov, 5, 1));
	EXPECT_EQ(0u, fi_cntr_read(sent));
	// A new endpoint, not connected: the plain path reports it.
	ASSERT_TRUE(p.open_client());
	EXPECT_EQ(-FI_EAGAIN, ops->inject_framed(p.client, "h", 1, &iov, 1, 1));
}

} // namespace
