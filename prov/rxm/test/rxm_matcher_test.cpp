// Matching engine, multi-receive slicing, SAR reassembly and credit accounting.
#include "prov/rxm/rxm_credits.h"
#include "prov/rxm/rxm_matcher.h"
#include "prov/rxm/rxm_multi_recv.h"
#include "prov/rxm/rxm_sar.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace rxm;

namespace {

PostedRecv recv(fi_addr_t src, uint64_t tag, uint64_t ignore, void *ctx)
{
	PostedRecv r;
	r.spec = {src, tag, ignore};
	r.context = ctx;
	return r;
}

UnexpectedMsg unexpected(fi_addr_t src, uint64_t tag)
{
	UnexpectedMsg m;
	m.source = src;
	m.tag = tag;
	return m;
}

} // namespace

TEST(RxmMatcher, PostedReceivesMatchInOrderWithIgnoreBits)
{
	Matcher m;
	int c1, c2;
	PostedRecv r1 = recv(FI_ADDR_UNSPEC, 0x100, 0x0f, &c1);
	PostedRecv r2 = recv(FI_ADDR_UNSPEC, 0x100, 0, &c2);
	m.post(MatchKind::tagged, &r1);
	m.post(MatchKind::tagged, &r2);
	EXPECT_EQ(nullptr, m.find_posted(MatchKind::tagged, 3, 0x200));
	EXPECT_EQ(nullptr, m.find_posted(MatchKind::msg, 3, 0x100)); // kinds do not mix
	EXPECT_EQ(&r1, m.find_posted(MatchKind::tagged, 3, 0x10f));  // ignored bits
	EXPECT_EQ(&r1, m.find_posted(MatchKind::tagged, 3, 0x100));  // oldest first
	Matcher::remove_posted(&r1);
	EXPECT_EQ(nullptr, m.find_posted(MatchKind::tagged, 3, 0x10f));
	EXPECT_EQ(&r2, m.find_posted(MatchKind::tagged, 3, 0x100));
}

TEST(RxmMatcher, DirectedReceiveMatchesOnlyItsSource)
{
	Matcher m;
	PostedRecv r = recv(7, 0, 0, nullptr);
	m.post(MatchKind::msg, &r);
	EXPECT_EQ(nullptr, m.find_posted(MatchKind::msg, 8, 0));
	EXPECT_EQ(&r, m.find_posted(MatchKind::msg, 7, 0));

	UnexpectedMsg u8 = unexpected(8, 1), u7 = unexpected(7, 1);
	m.add_unexpected(MatchKind::tagged, &u8);
	m.add_unexpected(MatchKind::tagged, &u7);
	EXPECT_EQ(&u7, m.find_unexpected(MatchKind::tagged, {7, 1, 0}));
	EXPECT_EQ(&u8, m.find_unexpected(MatchKind::tagged, {FI_ADDR_UNSPEC, 1, 0}));
}

TEST(RxmMatcher, PeekClaimAndCancel)
{
	Matcher m;
	UnexpectedMsg a = unexpected(1, 5), b = unexpected(1, 5);
	m.add_unexpected(MatchKind::tagged, &a);
	m.add_unexpected(MatchKind::tagged, &b);
	MatchSpec spec{FI_ADDR_UNSPEC, 5, 0};
	// FI_PEEK|FI_CLAIM reserves the oldest; later matches skip it.
	UnexpectedMsg *peeked = m.find_unexpected(MatchKind::tagged, spec);
	ASSERT_EQ(&a, peeked);
	int claim_ctx;
	peeked->claim_context = &claim_ctx;
	EXPECT_EQ(&b, m.find_unexpected(MatchKind::tagged, spec));
	EXPECT_EQ(&a, m.find_claimed(MatchKind::tagged, &claim_ctx));
	Matcher::remove_unexpected(&a);
	EXPECT_EQ(nullptr, m.find_claimed(MatchKind::tagged, &claim_ctx));

	int ctx;
	PostedRecv r = recv(FI_ADDR_UNSPEC, 0, 0, &ctx);
	m.post(MatchKind::msg, &r);
	EXPECT_EQ(nullptr, m.cancel(&claim_ctx));
	EXPECT_EQ(&r, m.cancel(&ctx));
	EXPECT_TRUE(m.posted_empty(MatchKind::msg));
	EXPECT_EQ(nullptr, m.cancel(&ctx));
}

TEST(RxmMultiRecv, SlicesUntilMinFreeThenReleasesAfterLastFinish)
{
	std::vector<uint8_t> buf(100);
	MultiRecvBuffer mr(buf.data(), buf.size(), 30);
	auto s1 = mr.take(40);
	EXPECT_EQ(buf.data(), s1.data);
	EXPECT_EQ(40u, s1.len);
	EXPECT_FALSE(mr.retired());
	auto s2 = mr.take(40); // leaves 20 < 30
	EXPECT_EQ(buf.data() + 40, s2.data);
	EXPECT_TRUE(mr.retired());
	EXPECT_FALSE(mr.finish()); // s1 done, s2 still in flight
	EXPECT_TRUE(mr.finish());  // last one reports FI_MULTI_RECV
}

TEST(RxmMultiRecv, TruncatesToRemainingSpace)
{
	std::vector<uint8_t> buf(10);
	MultiRecvBuffer mr(buf.data(), buf.size(), 0);
	auto s = mr.take(25);
	EXPECT_EQ(10u, s.len);
	EXPECT_TRUE(mr.retired());
	EXPECT_TRUE(mr.finish());
}

TEST(RxmSar, ReassemblesConsecutiveSegments)
{
	std::vector<uint8_t> dest(10, 0);
	const uint8_t data[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
	WireHeader h;
	h.op = WireOp::sar_segment;
	h.msg_id = 3;
	h.total_len = 10;
	h.payload_len = 6;
	SarReassembly sar;
	sar.begin(h);
	auto place = [&](uint64_t off, std::span<const uint8_t> b) {
		memcpy(dest.data() + off, b.data(), b.size());
	};
	EXPECT_EQ(SarReassembly::Result::more, sar.accept(h, std::span(data, 6), place));
	WireHeader last = h;
	last.offset = 6;
	last.payload_len = 4;
	last.flags = wire_flag::last_segment;
	EXPECT_EQ(SarReassembly::Result::complete, sar.accept(last, std::span(data + 6, 4), place));
	EXPECT_EQ(0, memcmp(dest.data(), data, 10));
	EXPECT_FALSE(sar.active());
}

TEST(RxmSar, RejectsGapsForeignIdsAndInactive)
{
	WireHeader h;
	h.op = WireOp::sar_segment;
	h.msg_id = 3;
	h.total_len = 10;
	h.payload_len = 5;
	SarReassembly sar;
	auto place = [](uint64_t, std::span<const uint8_t>) { FAIL() << "must not place"; };
	uint8_t five[5] = {};
	EXPECT_EQ(SarReassembly::Result::protocol_error, sar.accept(h, five, place));
	sar.begin(h);
	WireHeader gap = h;
	gap.offset = 5; // first segment skipped
	EXPECT_EQ(SarReassembly::Result::protocol_error, sar.accept(gap, five, place));
	WireHeader other = h;
	other.msg_id = 4;
	EXPECT_EQ(SarReassembly::Result::protocol_error, sar.accept(other, five, place));
}

TEST(RxmCredits, LastCreditIsReservedForUpdates)
{
	SendCredits c(3);
	EXPECT_TRUE(c.take_for_data());
	EXPECT_TRUE(c.take_for_data());
	EXPECT_FALSE(c.take_for_data()); // one left, reserved
	EXPECT_TRUE(c.take_for_credit_update());
	EXPECT_FALSE(c.take_for_credit_update());
	c.grant(2);
	EXPECT_TRUE(c.take_for_data());
}

TEST(RxmCredits, DisabledNeverBlocks)
{
	SendCredits c(0);
	EXPECT_FALSE(c.enabled());
	for (int i = 0; i < 1000; i++)
		ASSERT_TRUE(c.take_for_data());
}

TEST(RxmCredits, ReturnBatches)
{
	CreditReturn r(4);
	for (int i = 0; i < 3; i++)
		r.buffer_reposted();
	EXPECT_FALSE(r.update_due());
	r.buffer_reposted();
	EXPECT_TRUE(r.update_due());
	EXPECT_EQ(4u, r.take_pending());
	EXPECT_FALSE(r.update_due());
}

TEST(RxmCredits, PiggybackedCreditsAreNoLongerPending)
{
	CreditReturn r(4);
	for (int i = 0; i < 3; i++)
		r.buffer_reposted();
	EXPECT_EQ(3u, r.to_piggyback());
	r.piggybacked(r.to_piggyback()); // a message to the peer carried them
	EXPECT_EQ(0u, r.pending());
	for (int i = 0; i < 4; i++)
		r.buffer_reposted();
	r.piggybacked(1); // one went back with a message meanwhile: no update due yet
	EXPECT_FALSE(r.update_due());
	EXPECT_EQ(3u, r.pending());
	r.piggybacked(9); // never below zero
	EXPECT_EQ(0u, r.pending());
}

TEST(RxmCredits, PiggybackIsBoundedByTheHeaderField)
{
	CreditReturn r(1u << 20);
	for (int i = 0; i < 70000; i++)
		r.buffer_reposted();
	EXPECT_EQ(65535u, r.to_piggyback());
	r.piggybacked(r.to_piggyback());
	EXPECT_EQ(70000u - 65535u, r.pending());
}

TEST(RxmCredits, BatchSetLaterKeepsCountedBuffers)
{
	CreditReturn r;
	r.buffer_reposted(); // before the connection is reported up
	r.buffer_reposted();
	r.set_batch(3);
	EXPECT_FALSE(r.update_due());
	r.buffer_reposted();
	EXPECT_TRUE(r.update_due());
	EXPECT_EQ(3u, r.take_pending());
}
