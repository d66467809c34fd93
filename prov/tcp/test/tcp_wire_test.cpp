// Wire header and CM message encoding: round trips and rejection of malformed input.
#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_wire.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

using namespace tcp;

namespace {

WireHeader sample()
{
	WireHeader h;
	h.op = WireOp::write;
	h.flags = kWireFlagRemoteData | kWireFlagWantAck;
	h.size = 0x0102030405060708ULL;
	h.id = 0x1122334455667788ULL;
	h.cq_data = 0xdeadbeefcafef00dULL;
	h.rma_key = 42;
	h.rma_offset = 4096;
	return h;
}

} // namespace

TEST(TcpWire, HeaderRoundTrip)
{
	uint8_t buf[kWireHeaderSize];
	WireHeader in = sample();
	encode_header(in, buf);
	WireHeader out;
	ASSERT_EQ(0, decode_header(buf, UINT64_MAX, &out));
	EXPECT_EQ(in.op, out.op);
	EXPECT_EQ(in.flags, out.flags);
	EXPECT_EQ(in.size, out.size);
	EXPECT_EQ(in.id, out.id);
	EXPECT_EQ(in.cq_data, out.cq_data);
	EXPECT_EQ(in.rma_key, out.rma_key);
	EXPECT_EQ(in.rma_offset, out.rma_offset);
}

TEST(TcpWire, LayoutIsLittleEndianAndFixed)
{
	uint8_t buf[kWireHeaderSize];
	WireHeader h;
	h.op = WireOp::msg;
	h.size = 0x0201;
	encode_header(h, buf);
	EXPECT_EQ(kWireVersion, buf[0]);
	EXPECT_EQ(1, buf[1]);
	EXPECT_EQ(0x01, buf[8]);
	EXPECT_EQ(0x02, buf[9]);
}

TEST(TcpWire, RejectsBadVersionOpFlagsAndSizes)
{
	uint8_t buf[kWireHeaderSize];
	WireHeader out;
	encode_header(sample(), buf);

	uint8_t bad[kWireHeaderSize];
	memcpy(bad, buf, sizeof(bad));
	bad[0] = 99;
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));

	memcpy(bad, buf, sizeof(bad));
	bad[1] = 0;
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));
	bad[1] = 77;
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));

	memcpy(bad, buf, sizeof(bad));
	bad[3] = 0x80;   // unknown flag bit
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));

	// Payload larger than the receiver allows.
	EXPECT_EQ(-FI_EIO, decode_header(buf, 100, &out));

	// An ack with a payload, a request carrying an error status.
	WireHeader ack;
	ack.op = WireOp::ack;
	ack.size = 5;
	encode_header(ack, bad);
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));
	WireHeader req = sample();
	req.status = -FI_EACCES;
	encode_header(req, bad);
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));

	// A positive status is never valid.
	WireHeader resp;
	resp.op = WireOp::ack;
	resp.status = 5;
	encode_header(resp, bad);
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));
	resp.status = -FI_EACCES;
	encode_header(resp, bad);
	EXPECT_EQ(0, decode_header(bad, UINT64_MAX, &out));
	EXPECT_EQ(-FI_EACCES, out.status);
}

TEST(TcpWire, CmHeaderRoundTripAndLimits)
{
	uint8_t buf[kCmHeaderSize];
	encode_cm_header(CmType::reject, 200, buf);
	CmType type;
	uint16_t len;
	ASSERT_EQ(0, decode_cm_header(buf, &type, &len));
	EXPECT_EQ(CmType::reject, type);
	EXPECT_EQ(200, len);

	encode_cm_header(CmType::accept, kMaxCmData + 1, buf);
	EXPECT_EQ(-FI_EIO, decode_cm_header(buf, &type, &len));
	encode_cm_header(CmType::accept, 0, buf);
	buf[0] ^= 0xff;
	EXPECT_EQ(-FI_EIO, decode_cm_header(buf, &type, &len));
	encode_cm_header(CmType::accept, 0, buf);
	buf[5] = 9;
	EXPECT_EQ(-FI_EIO, decode_cm_header(buf, &type, &len));
}
