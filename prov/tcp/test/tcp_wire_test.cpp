// Wire header and CM message encoding: round trips and rejection of malformed input.
#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_wire.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

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

TEST(TcpWire, ShortMessageHeader)
{
	uint8_t buf[kShortHeaderSize];
	encode_short_msg_header(0x01020304, buf);
	EXPECT_EQ(kWireVersion, buf[0]);
	EXPECT_EQ(kWireOpShortMsg, buf[1]);
	EXPECT_EQ(kShortHeaderSize, header_size(buf));
	EXPECT_EQ(0x04, buf[4]);
	EXPECT_EQ(0x01, buf[7]);
	WireHeader out;
	out.id = 7;
	out.cq_data = 9;
	ASSERT_EQ(0, decode_header(buf, UINT64_MAX, &out));
	EXPECT_EQ(WireOp::msg, out.op);
	EXPECT_EQ(0x01020304u, out.size);
	EXPECT_EQ(0, out.flags);
	EXPECT_EQ(0u, out.id);
	EXPECT_EQ(0u, out.cq_data);
	// Over the announced limit, with flags, or with another version: refused.
	EXPECT_EQ(-FI_EIO, decode_header(buf, 0x01020303, &out));
	uint8_t bad[kShortHeaderSize];
	memcpy(bad, buf, sizeof(bad));
	bad[2] = 1; // remote CQ data needs the full header
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));
	memcpy(bad, buf, sizeof(bad));
	bad[0] = 2;
	EXPECT_EQ(-FI_EIO, decode_header(bad, UINT64_MAX, &out));
	// A full header is not taken for a short one.
	uint8_t full[kWireHeaderSize];
	encode_header(sample(), full);
	EXPECT_EQ(kWireHeaderSize, header_size(full));
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

namespace {

// Feeds one CM message through a socket pair into a CmReader; returns read_from's verdict.
int read_cm(const std::vector<uint8_t> &bytes, CmReader *reader)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -errno;
	ssize_t n = write(sv[1], bytes.data(), bytes.size());
	close(sv[1]);
	int ret = n == static_cast<ssize_t>(bytes.size()) ? reader->read_from(sv[0]) : -FI_EIO;
	close(sv[0]);
	return ret;
}

std::vector<uint8_t> auth_request(uint8_t key_len, size_t key_bytes, size_t data_bytes)
{
	std::vector<uint8_t> msg(kCmHeaderSize + 1 + key_bytes + data_bytes, 'k');
	encode_cm_header(CmType::auth_request, static_cast<uint16_t>(1 + key_bytes + data_bytes),
			 msg.data());
	msg[kCmHeaderSize] = key_len;
	return msg;
}

} // namespace

// A request with an authorization key: length byte, key, CM data. The reader hands out key
// and data apart, and refuses keys that are empty, too long or longer than the message.
TEST(TcpWire, AuthRequestCarriesKeyAndDataApart)
{
	CmReader ok;
	auto msg = auth_request(3, 3, 5);
	memcpy(msg.data() + kCmHeaderSize + 1, "abc", 3);
	memcpy(msg.data() + kCmHeaderSize + 4, "data", 5);
	ASSERT_EQ(1, read_cm(msg, &ok));
	EXPECT_EQ(CmType::request, ok.type());
	ASSERT_EQ(3u, ok.key_len());
	EXPECT_EQ(0, memcmp(ok.key(), "abc", 3));
	ASSERT_EQ(5u, ok.data_len());
	EXPECT_STREQ("data", reinterpret_cast<const char *>(ok.data()));
	EXPECT_TRUE(auth_keys_match(ok.key(), ok.key_len(),
				    reinterpret_cast<const uint8_t *>("abc"), 3));
	EXPECT_FALSE(auth_keys_match(ok.key(), ok.key_len(),
				     reinterpret_cast<const uint8_t *>("abd"), 3));
	EXPECT_FALSE(auth_keys_match(ok.key(), ok.key_len(), nullptr, 0));

	CmReader empty, too_long, beyond, too_much_data;
	EXPECT_EQ(-FI_EIO, read_cm(auth_request(0, 0, 4), &empty));
	EXPECT_EQ(-FI_EIO, read_cm(auth_request(kMaxAuthKey + 1, kMaxAuthKey + 1, 0), &too_long));
	EXPECT_EQ(-FI_EIO, read_cm(auth_request(10, 4, 0), &beyond));
	EXPECT_EQ(-FI_EIO, read_cm(auth_request(1, 1, kMaxCmData + 1), &too_much_data));

	CmReader plain;
	std::vector<uint8_t> request(kCmHeaderSize + 2, 'x');
	encode_cm_header(CmType::request, 2, request.data());
	ASSERT_EQ(1, read_cm(request, &plain));
	EXPECT_EQ(0u, plain.key_len());
	EXPECT_EQ(2u, plain.data_len());
}
