// Wire protocol: round trips, and rejection of malformed (untrusted) bytes.
#include "prov/rxm/rxm_wire.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace rxm;

namespace {

std::vector<uint8_t> message(const WireHeader &h, size_t payload_len)
{
	std::vector<uint8_t> m(kWireHeaderSize + payload_len, 0x5a);
	encode_header(h, m.data());
	return m;
}

WireHeader eager(uint32_t len)
{
	WireHeader h;
	h.op = WireOp::eager;
	h.payload_len = len;
	h.total_len = len;
	return h;
}

} // namespace

TEST(RxmWire, HeaderRoundTrip)
{
	WireHeader h = eager(5);
	h.flags = wire_flag::tagged | wire_flag::remote_cq_data;
	h.tag = 0x1122334455667788ULL;
	h.cq_data = 0xdeadbeefcafef00dULL;
	h.msg_id = 42;
	auto m = message(h, 5);
	WireHeader d;
	ASSERT_EQ(0, decode_message(m, &d));
	EXPECT_EQ(WireOp::eager, d.op);
	EXPECT_EQ(h.flags, d.flags);
	EXPECT_EQ(h.tag, d.tag);
	EXPECT_EQ(h.cq_data, d.cq_data);
	EXPECT_EQ(42u, d.msg_id);
	EXPECT_EQ(5u, d.total_len);
}

TEST(RxmWire, EncodingIsLittleEndianAtFixedOffsets)
{
	WireHeader h = eager(0);
	h.tag = 0x0102030405060708ULL;
	uint8_t out[kWireHeaderSize];
	encode_header(h, out);
	EXPECT_EQ(kWireVersion, out[0]);
	EXPECT_EQ(1, out[1]);
	EXPECT_EQ(0x08, out[8]);
	EXPECT_EQ(0x01, out[15]);
}

// The small send's inline encoder writes what encode_header writes for the same message.
TEST(RxmWire, EagerHeaderEncoderMatchesEncodeHeader)
{
	for (uint16_t flags : {uint16_t(0), wire_flag::tagged, wire_flag::remote_cq_data,
			       uint16_t(wire_flag::tagged | wire_flag::remote_cq_data)}) {
		WireHeader h = eager(1000);
		h.flags = flags;
		h.tag = 0x0102030405060708ULL;
		h.cq_data = 0x1112131415161718ULL;
		h.msg_id = 0;
		h.conn_id = 0xa1b2c3d4u;
		h.credits = 0x1234;
		uint8_t want[kWireHeaderSize];
		uint8_t got[kWireHeaderSize];
		memset(got, 0xee, sizeof(got));
		encode_header(h, want);
		encode_eager_header(got, flags, h.tag, h.cq_data, 1000, h.conn_id, h.credits);
		EXPECT_EQ(0, memcmp(want, got, kWireHeaderSize)) << "flags " << flags;
	}
}

TEST(RxmWire, ConnectionIdIsStampedAndReservedBytesChecked)
{
	auto m = message(eager(3), 3);
	stamp_conn_id(m.data(), 0xa1b2c3d4u);
	EXPECT_EQ(0xd4, m[48]);
	EXPECT_EQ(0xa1, m[51]);
	WireHeader d;
	ASSERT_EQ(0, decode_message(m, &d));
	EXPECT_EQ(0xa1b2c3d4u, d.conn_id);
	m[55] = 1; // reserved
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
}

TEST(RxmWire, ReturnedCreditsRideInAnyHeader)
{
	auto m = message(eager(3), 3);
	WireHeader d;
	ASSERT_EQ(0, decode_message(m, &d));
	EXPECT_EQ(0u, d.credits);
	stamp_credits(m.data(), 0x1234);
	EXPECT_EQ(0x34, m[52]);
	EXPECT_EQ(0x12, m[53]);
	ASSERT_EQ(0, decode_message(m, &d));
	EXPECT_EQ(0x1234u, d.credits);
	WireHeader h = eager(0);
	h.credits = 7;
	std::vector<uint8_t> encoded(kWireHeaderSize);
	encode_header(h, encoded.data());
	ASSERT_EQ(0, decode_message(encoded, &d));
	EXPECT_EQ(7u, d.credits);
}

TEST(RxmWire, RejectsShortBadVersionOpFlags)
{
	WireHeader d;
	std::vector<uint8_t> shortmsg(kWireHeaderSize - 1, 0);
	EXPECT_EQ(-FI_EIO, decode_message(shortmsg, &d));

	auto m = message(eager(0), 0);
	m[0] = 2;
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	m = message(eager(0), 0);
	m[1] = 0;
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	m[1] = kWireOpLast + 1;
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	m = message(eager(0), 0);
	m[3] = 0x80; // unknown flag
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
}

TEST(RxmWire, PayloadLengthMustMatchMessage)
{
	WireHeader d;
	auto m = message(eager(10), 9);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	m = message(eager(10), 11);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	WireHeader h = eager(10);
	h.total_len = 11; // eager must be whole
	m = message(h, 10);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
}

TEST(RxmWire, SarSegmentBounds)
{
	WireHeader h;
	h.op = WireOp::sar_segment;
	h.total_len = 100;
	h.offset = 60;
	h.payload_len = 40;
	WireHeader d;
	auto m = message(h, 40);
	EXPECT_EQ(0, decode_message(m, &d)); // not last: fine
	h.flags = wire_flag::last_segment;
	m = message(h, 40);
	EXPECT_EQ(0, decode_message(m, &d));
	h.offset = 61; // beyond total
	m = message(h, 40);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	h.offset = UINT64_MAX - 10; // overflow attempt
	m = message(h, 40);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	h.flags = wire_flag::last_segment;
	h.offset = 0; // last but short of total
	m = message(h, 40);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
}

TEST(RxmWire, CreditUpdateNeedsCredits)
{
	WireHeader h;
	h.op = WireOp::credit_update;
	h.offset = 0;
	WireHeader d;
	auto m = message(h, 0);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	h.offset = 7;
	m = message(h, 0);
	ASSERT_EQ(0, decode_message(m, &d));
	EXPECT_EQ(7u, d.offset);
}

TEST(RxmWire, RendezvousRoundTripAndValidation)
{
	RndvSegment segs[2] = {{0x1000, 300, 7}, {0x9000, 700, 8}};
	std::vector<uint8_t> payload(rndv_payload_size(2));
	encode_rndv(segs, payload.data());
	RndvSegment out[kRndvMaxSegments];
	size_t n = 0;
	ASSERT_EQ(0, decode_rndv(payload, 1000, out, &n));
	EXPECT_EQ(2u, n);
	EXPECT_EQ(0x9000u, out[1].addr);
	EXPECT_EQ(8u, out[1].key);
	EXPECT_EQ(-FI_EIO, decode_rndv(payload, 999, out, &n));  // lengths must sum to total
	EXPECT_EQ(-FI_EIO, decode_rndv(payload, 1001, out, &n));
	payload[0] = 5; // too many segments
	EXPECT_EQ(-FI_EIO, decode_rndv(payload, 1000, out, &n));
	payload[0] = 0;
	EXPECT_EQ(-FI_EIO, decode_rndv(payload, 1000, out, &n));

	RndvSegment huge[2] = {{0, UINT64_MAX, 1}, {0, 2, 1}}; // sum overflows
	encode_rndv(huge, payload.data());
	EXPECT_EQ(-FI_EIO, decode_rndv(payload, 1, out, &n));

	WireHeader h;
	h.op = WireOp::rndv_request;
	h.total_len = 1000;
	h.payload_len = static_cast<uint32_t>(rndv_payload_size(2));
	WireHeader d;
	auto m = message(h, rndv_payload_size(2));
	EXPECT_EQ(0, decode_message(m, &d));
	h.payload_len = 4;
	m = message(h, 4);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
}

TEST(RxmWire, AtomicRequestValidation)
{
	AtomicRequest req{FI_SUM, FI_UINT64, 2, 0x1000, 99};
	std::vector<uint8_t> p(kAtomicRequestFixedSize + 16);
	encode_atomic_request(req, p.data());
	AtomicRequest d;
	std::span<const uint8_t> operand, compare;
	ASSERT_EQ(0, decode_atomic_request(p, 0, &d, &operand, &compare));
	EXPECT_EQ(16u, operand.size());
	EXPECT_TRUE(compare.empty());
	EXPECT_EQ(99u, d.key);
	// Operand count does not match the payload.
	EXPECT_EQ(-FI_EIO, decode_atomic_request(std::span(p).first(p.size() - 1), 0, &d, &operand, &compare));
	// Compare op without compare flag, and compare flag on a plain op.
	req.op = FI_CSWAP;
	encode_atomic_request(req, p.data());
	EXPECT_EQ(-FI_EIO, decode_atomic_request(p, wire_flag::atomic_fetch, &d, &operand, &compare));
	std::vector<uint8_t> c(kAtomicRequestFixedSize + 32);
	encode_atomic_request(req, c.data());
	EXPECT_EQ(0, decode_atomic_request(c, wire_flag::atomic_fetch | wire_flag::atomic_compare,
					   &d, &operand, &compare));
	EXPECT_EQ(16u, compare.size());
	// Unknown datatype and op.
	req = {FI_SUM, FI_LONG_DOUBLE_COMPLEX, 1, 0, 0};
	encode_atomic_request(req, p.data());
	EXPECT_EQ(-FI_EIO, decode_atomic_request(p, 0, &d, &operand, &compare));
	req = {FI_ATOMIC_OP_LAST, FI_UINT8, 1, 0, 0};
	encode_atomic_request(req, p.data());
	EXPECT_EQ(-FI_EIO, decode_atomic_request(p, 0, &d, &operand, &compare));
	// A read carries no operand but must ask for the fetched value.
	req = {FI_ATOMIC_READ, FI_UINT32, 3, 0, 0};
	encode_atomic_request(req, p.data());
	auto r = std::span<const uint8_t>(p).first(kAtomicRequestFixedSize);
	EXPECT_EQ(-FI_EIO, decode_atomic_request(r, 0, &d, &operand, &compare));
	EXPECT_EQ(0, decode_atomic_request(r, wire_flag::atomic_fetch, &d, &operand, &compare));
}

// fi_atomicmsg with several rma iocs: the further targets follow the fixed part, the
// operands of all targets follow them.
TEST(RxmWire, AtomicRequestWithSeveralTargets)
{
	AtomicRequest req{FI_SUM, FI_UINT32, 1, 0x1000, 7};
	req.extra_count = 2;
	req.extra[0] = {0x2000, 8, 2};
	req.extra[1] = {0x3000, 9, 3};
	ASSERT_EQ(6u, req.total_count());
	size_t head = atomic_request_head_size(req);
	ASSERT_EQ(kAtomicRequestFixedSize + 2 * kAtomicTargetSize, head);
	std::vector<uint8_t> p(head + 6 * 4);
	encode_atomic_request(req, p.data());
	AtomicRequest d;
	std::span<const uint8_t> operand, compare;
	ASSERT_EQ(0, decode_atomic_request(p, 0, &d, &operand, &compare));
	EXPECT_EQ(3u, d.target_count());
	EXPECT_EQ(24u, operand.size());
	EXPECT_EQ(0x3000u, d.target(2).addr);
	EXPECT_EQ(9u, d.target(2).key);
	EXPECT_EQ(3u, d.target(2).count);
	EXPECT_EQ(0x1000u, d.target(0).addr);
	// Operands for fewer elements than the targets name.
	EXPECT_EQ(-FI_EIO, decode_atomic_request(std::span(p).first(p.size() - 4), 0, &d,
						 &operand, &compare));
	// An empty further target, a non-zero reserved word, too many targets, a cut table.
	std::vector<uint8_t> bad = p;
	bad[kAtomicRequestFixedSize + 16] = 0;
	EXPECT_EQ(-FI_EIO, decode_atomic_request(bad, 0, &d, &operand, &compare));
	bad = p;
	bad[kAtomicRequestFixedSize + 20] = 1;
	EXPECT_EQ(-FI_EIO, decode_atomic_request(bad, 0, &d, &operand, &compare));
	bad = p;
	bad[2] = kAtomicMaxTargets;
	EXPECT_EQ(-FI_EIO, decode_atomic_request(bad, 0, &d, &operand, &compare));
	EXPECT_EQ(-FI_EIO, decode_atomic_request(std::span(p).first(kAtomicRequestFixedSize + 8),
						 0, &d, &operand, &compare));
}

TEST(RxmWire, AtomicResponse)
{
	uint8_t p[kAtomicResponseFixedSize + 4];
	encode_atomic_response(-FI_EACCES, p);
	int32_t status = 0;
	std::span<const uint8_t> fetched;
	ASSERT_EQ(0, decode_atomic_response(p, &status, &fetched));
	EXPECT_EQ(-FI_EACCES, status);
	EXPECT_EQ(4u, fetched.size());
	encode_atomic_response(5, p); // positive statuses are not valid
	EXPECT_EQ(-FI_EIO, decode_atomic_response(p, &status, &fetched));
}

TEST(RxmWire, CollectiveMessages)
{
	WireHeader h;
	h.op = WireOp::collective;
	h.tag = 0x1234;        // group wire id
	h.msg_id = 7;          // sequence
	h.offset = 3 | 2 << 8; // step
	h.payload_len = 16;
	h.total_len = 16;
	WireHeader d;
	auto m = message(h, 16);
	ASSERT_EQ(0, decode_message(m, &d));
	EXPECT_EQ(WireOp::collective, d.op);
	EXPECT_EQ(0x1234u, d.tag);
	EXPECT_EQ(7u, d.msg_id);
	EXPECT_EQ(h.offset, d.offset);
	h.total_len = 17; // the payload is the whole message
	m = message(h, 16);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
	h.total_len = 16;
	h.offset = 1ULL << 32; // steps are 32 bits
	m = message(h, 16);
	EXPECT_EQ(-FI_EIO, decode_message(m, &d));
}

// decode_plain_eager (the receive's inline check of the common eager header) accepts what
// encode_eager_header writes, with the fields decode_message gives.
TEST(RxmWire, PlainEagerDecodeAgreesWithFullDecode)
{
	for (uint16_t flags : {uint16_t(0), wire_flag::tagged, wire_flag::remote_cq_data,
			       uint16_t(wire_flag::tagged | wire_flag::remote_cq_data)}) {
		for (uint32_t len : {0u, 1u, 8u, 4000u}) {
			std::vector<uint8_t> m(kWireHeaderSize + len, 0x5a);
			encode_eager_header(m.data(), flags, 0x0102030405060708ULL,
					    0x1112131415161718ULL, len, 0xa1b2c3d4u, 7);
			EagerHeader e;
			ASSERT_TRUE(decode_plain_eager(m.data(), m.size(), &e)) << flags << " " << len;
			WireHeader d;
			ASSERT_EQ(0, decode_message(m, &d));
			EXPECT_EQ(d.flags, e.flags);
			EXPECT_EQ(d.tag, e.tag);
			EXPECT_EQ(d.cq_data, e.cq_data);
			EXPECT_EQ(d.msg_id, e.msg_id);
			WireHeader p = plain_eager_header(e, len);
			EXPECT_EQ(d.op, p.op);
			EXPECT_EQ(d.flags, p.flags);
			EXPECT_EQ(d.payload_len, p.payload_len);
			EXPECT_EQ(d.tag, p.tag);
			EXPECT_EQ(d.cq_data, p.cq_data);
			EXPECT_EQ(d.msg_id, p.msg_id);
			EXPECT_EQ(d.total_len, p.total_len);
			EXPECT_EQ(d.offset, p.offset);
		}
	}
}

// A forged header: whatever byte a peer changes, decode_plain_eager accepts only what
// decode_message accepts too, with the same fields; the fields it folds into its few
// compares are each rejected.
TEST(RxmWire, PlainEagerDecodeRejectsEveryForgedField)
{
	const uint32_t len = 16;
	std::vector<uint8_t> good(kWireHeaderSize + len, 0x5a);
	encode_eager_header(good.data(), wire_flag::tagged, 0x0102030405060708ULL, 0, len, 3, 0);
	for (size_t at = 0; at < kWireHeaderSize; at++) {
		for (uint8_t v : {uint8_t(0x00), uint8_t(0x01), uint8_t(0x02), uint8_t(0x08),
				  uint8_t(0x10), uint8_t(0x80), uint8_t(0xff),
				  uint8_t(good[at] ^ 0x01)}) {
			std::vector<uint8_t> m = good;
			m[at] = v;
			EagerHeader e;
			if (!decode_plain_eager(m.data(), m.size(), &e))
				continue;
			WireHeader d;
			ASSERT_EQ(0, decode_message(m, &d)) << "byte " << at << " = " << int(v);
			EXPECT_EQ(WireOp::eager, d.op);
			EXPECT_EQ(d.flags, e.flags);
			EXPECT_EQ(d.tag, e.tag);
			EXPECT_EQ(d.cq_data, e.cq_data);
			EXPECT_EQ(d.msg_id, e.msg_id);
		}
	}
	auto rejects = [&](size_t at, uint8_t v) {
		std::vector<uint8_t> m = good;
		m[at] = v;
		EagerHeader e;
		return !decode_plain_eager(m.data(), m.size(), &e);
	};
	EXPECT_TRUE(rejects(0, kWireVersion + 1));                        // version
	EXPECT_TRUE(rejects(1, uint8_t(WireOp::sar_segment)));            // op
	EXPECT_TRUE(rejects(2, wire_flag::tagged | wire_flag::delivery_complete));
	EXPECT_TRUE(rejects(2, wire_flag::tagged | wire_flag::cma));
	EXPECT_TRUE(rejects(3, 0x01));                                    // cma_only
	EXPECT_TRUE(rejects(3, 0x02));                                    // unknown flag
	EXPECT_TRUE(rejects(4, len + 1));                                 // payload_len
	EXPECT_TRUE(rejects(7, 0x01));
	EXPECT_TRUE(rejects(32, len - 1));                                // total_len
	EXPECT_TRUE(rejects(39, 0x01));
	EXPECT_TRUE(rejects(40, 0x01));                                   // offset
	EXPECT_TRUE(rejects(47, 0x80));
	EXPECT_TRUE(rejects(54, 0x01));                                   // padding
	EXPECT_TRUE(rejects(55, 0x01));
	EagerHeader e;
	EXPECT_FALSE(decode_plain_eager(good.data(), kWireHeaderSize - 1, &e)); // short
	EXPECT_FALSE(decode_plain_eager(good.data(), good.size() - 1, &e));     // length
	// A message 4 GiB longer than its header says (payload_len is 32 bits) is not it.
	EXPECT_FALSE(decode_plain_eager(good.data(), good.size() + (1ULL << 32), &e));
}
