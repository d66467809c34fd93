// Framed sends (prov/util/framed_send_ops.h, Connection::send_framed): a caller's header and
// payload pieces leave as one message in one sendmsg and complete as an inject (counted,
// no completion); refused with nothing changed whenever they would overtake something or
// the socket takes nothing; the rest of a frame the socket took in part follows before
// anything posted later. Also through the API: fi_open_ops on the tcp domain.
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/test/tcp_sink_pair.h"
#include "prov/tcp/test/tcp_test_pair.h"
#include "prov/util/framed_send_ops.h"
#define COUNT_SENDMSG_COUNTS_ONLY // (tcp_gather_test.cpp defines the counting sendmsg)
#include "test/count_sendmsg.h"

#include <rdma/fi_errno.h>

#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace tcp;

using test_count::sendmsg_buffers;
using test_count::sendmsg_calls;

namespace {

// What a receiver of the pair got: one buffer per message.
struct Received {
	std::vector<std::vector<char>> bufs;
	void post(Connection &c, size_t n, size_t len)
	{
		bufs.assign(n, std::vector<char>(len));
		for (auto &b : bufs) {
			iovec r{b.data(), b.size()};
			ASSERT_EQ(0, c.post_recv(&r, 1, b.data(), FI_COMPLETION));
		}
	}
	std::string message(const tcp_test::Sink &s, size_t i) const
	{
		return std::string(static_cast<const char *>(s.received[i]), s.lengths[i]);
	}
};

std::string pattern(size_t len, int seed)
{
	std::string s(len, '\0');
	for (size_t i = 0; i < len; i++)
		s[i] = static_cast<char>('a' + (i * 7 + static_cast<size_t>(seed)) % 26);
	return s;
}

} // namespace

TEST(TcpFramed, HeaderAndPiecesLeaveAsOneMessageInOneCall)
{
	tcp_test::SinkPair p;
	Received got;
	got.post(*p.b, 2, 8192);
	std::string hdr = pattern(56, 1), one = pattern(100, 2), two = pattern(30, 3);
	iovec pieces[2] = {{one.data(), one.size()}, {two.data(), two.size()}};
	sendmsg_calls = 0;
	sendmsg_buffers = 0;
	ASSERT_EQ(0, p.a->send_framed(hdr.data(), hdr.size(), pieces, 2, 130));
	EXPECT_EQ(1, sendmsg_calls.load());
	EXPECT_EQ(1, sendmsg_buffers.load()); // small: copied behind the headers
	// A payload over the copy bound goes from the caller's pieces (no copy).
	std::string big = pattern(3000, 4);
	iovec big_iov{big.data(), big.size()};
	ASSERT_EQ(0, p.a->send_framed(hdr.data(), hdr.size(), &big_iov, 1, big.size()));
	EXPECT_EQ(2, sendmsg_calls.load());
	EXPECT_EQ(3, sendmsg_buffers.load());
	EXPECT_EQ(2, p.oa.counted); // injects: counted, no completion
	EXPECT_TRUE(p.oa.sent.empty());
	EXPECT_TRUE(p.a->tx_idle());
	for (int i = 0; i < 10 && p.ob.received.size() < 2; i++)
		p.b->progress_rx();
	ASSERT_EQ(2u, p.ob.received.size());
	EXPECT_EQ(hdr + one + two, got.message(p.ob, 0));
	EXPECT_EQ(hdr + big, got.message(p.ob, 1));
	EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
}

TEST(TcpFramed, RefusedWithNothingChangedWhenItWouldOvertakeOrCannotGo)
{
	tcp_test::SinkPair p(0, false);
	std::string hdr = pattern(56, 5), text = pattern(40, 6);
	iovec piece{text.data(), text.size()};
	// Not streaming yet.
	EXPECT_EQ(-FI_EAGAIN, p.a->send_framed(hdr.data(), hdr.size(), &piece, 1, text.size()));
	p.a->attach(p.fds[0]);
	p.b->attach(p.fds[1]);
	// Over the bounds: header, frame.
	std::string huge_hdr(200, 'h'), huge(65536 + 200, 'x'); // over 64 KiB
	iovec huge_iov{huge.data(), huge.size()};
	EXPECT_EQ(-FI_EAGAIN, p.a->send_framed(huge_hdr.data(), huge_hdr.size(), &piece, 1,
					       text.size()));
	EXPECT_EQ(-FI_EAGAIN, p.a->send_framed(hdr.data(), hdr.size(), &huge_iov, 1, huge.size()));
	// Something queued before it (a send held for the next pass): it must not overtake.
	std::string first = "held first";
	iovec first_iov{first.data(), first.size()};
	PostArgs held;
	held.iov = &first_iov;
	held.count = 1;
	held.context = &first;
	held.op_flags = FI_COMPLETION;
	held.defer = true;
	ASSERT_EQ(0, p.a->post_msg(held));
	ASSERT_TRUE(p.a->holds_sends());
	sendmsg_calls = 0;
	EXPECT_EQ(-FI_EAGAIN, p.a->send_framed(hdr.data(), hdr.size(), &piece, 1, text.size()));
	EXPECT_EQ(0, sendmsg_calls.load());
	EXPECT_EQ(0, p.oa.counted);
	p.a->progress_tx();
	ASSERT_EQ(0, p.a->send_framed(hdr.data(), hdr.size(), &piece, 1, text.size()));
	Received got;
	got.post(*p.b, 2, 256);
	for (int i = 0; i < 10 && p.ob.received.size() < 2; i++)
		p.b->progress_rx();
	ASSERT_EQ(2u, p.ob.received.size());
	EXPECT_EQ(first, got.message(p.ob, 0));
	EXPECT_EQ(hdr + text, got.message(p.ob, 1));
	EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
}

// Frames of 4 KiB, of 12 KiB and of 40 KiB (rxm sends eager messages up to 64 KiB this way;
// the rest of the last is larger than the 16 KiB spill buffer smaller frames make).
TEST(TcpFramed, TheRestOfAPartlySentFrameGoesBeforeLaterSends)
{
	for (size_t size : {4000u, 12000u, 40000u}) {
		SCOPED_TRACE(size);
		tcp_test::SinkPair p(4096);
		std::string hdr = pattern(56, 7);
		std::vector<std::string> payloads;
		// Framed sends until the socket takes one only in part (the rest is then queued);
		// one refused whole instead is fine too: the loop goes on after draining nothing.
		int partial_at = -1, refused = 0;
		for (int i = 0; i < 60 && partial_at < 0; i++) {
			payloads.push_back(pattern(size, i));
			iovec piece{payloads.back().data(), payloads.back().size()};
			int ret = p.a->send_framed(hdr.data(), hdr.size(), &piece, 1, size);
			if (ret == -FI_EAGAIN) {
				payloads.pop_back();
				refused++;
				break; // full: no partial send on this system, checked below
			}
			ASSERT_EQ(0, ret);
			if (!p.a->tx_idle())
				partial_at = i;
		}
		ASSERT_GE(partial_at, 0) << "the socket never took a frame in part (" << refused
					 << " refused)";
		// The caller's buffer is free at once: its rest was copied.
		payloads.back().assign(payloads.back().size(), '!');
		std::string expect_last = pattern(size, partial_at);
		// Anything now waits behind the rest: framed sends are refused, plain ones queue.
		std::string text = pattern(50, 99);
		iovec piece{text.data(), text.size()};
		EXPECT_EQ(-FI_EAGAIN, p.a->send_framed(hdr.data(), hdr.size(), &piece, 1, text.size()));
		PostArgs later;
		later.iov = &piece;
		later.count = 1;
		later.context = &text;
		later.op_flags = FI_COMPLETION;
		ASSERT_EQ(0, p.a->post_msg(later));
		size_t frames = payloads.size();
		Received got;
		got.post(*p.b, frames + 1, 65536);
		for (int i = 0; i < 1000 && p.ob.received.size() < frames + 1; i++) {
			p.b->progress_rx();
			p.a->progress_tx();
		}
		ASSERT_EQ(frames + 1, p.ob.received.size());
		for (size_t i = 0; i + 1 < frames; i++)
			EXPECT_EQ(hdr + payloads[i], got.message(p.ob, i)) << i;
		EXPECT_EQ(hdr + expect_last, got.message(p.ob, frames - 1));
		EXPECT_EQ(text, got.message(p.ob, frames));
		EXPECT_EQ(static_cast<int>(frames), p.oa.counted); // the partial one counted when done
		ASSERT_EQ(1u, p.oa.sent.size());                   // only the plain send completes
		EXPECT_EQ(&text, p.oa.sent[0]);
		EXPECT_TRUE(p.a->tx_idle());
		EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
	}
}

TEST(TcpFramed, ThroughTheDomainOpsExtension)
{
	tcp_test::TcpPair p;
	ASSERT_TRUE(p.open());
	ASSERT_TRUE(p.connect());
	void *o = nullptr;
	ASSERT_EQ(0, fi_open_ops(&p.domain->fid, OFI_FRAMED_SEND_OPS_NAME, 0, &o, nullptr));
	auto *ops = static_cast<const ofi_framed_send_ops *>(o);
	ASSERT_GE(ops->size, sizeof(ofi_framed_send_ops));
	std::string hdr = pattern(56, 11), text = pattern(700, 12);
	iovec piece{text.data(), text.size()};
	// Not one of tcp's endpoints, no header: refused.
	EXPECT_EQ(-FI_EINVAL, ops->inject_framed(reinterpret_cast<fid_ep *>(p.client_cq),
						 hdr.data(), hdr.size(), &piece, 1, text.size()));
	EXPECT_EQ(-FI_EINVAL, ops->inject_framed(p.client, nullptr, 0, &piece, 1, text.size()));
	std::vector<char> in(2048);
	ASSERT_EQ(0, fi_recv(p.server, in.data(), in.size(), nullptr, 0, in.data()));
	ASSERT_EQ(0, ops->inject_framed(p.client, hdr.data(), hdr.size(), &piece, 1, text.size()));
	fi_cq_data_entry entry{};
	ASSERT_EQ(1, p.wait_cq(p.server_cq, &entry));
	EXPECT_EQ(in.data(), entry.op_context);
	ASSERT_EQ(hdr.size() + text.size(), entry.len);
	EXPECT_EQ(hdr + text, std::string(in.data(), entry.len));
	// An inject: the sender's CQ gets nothing.
	EXPECT_TRUE(p.cq_stays_empty(p.client_cq, 50));
}

// The read side's header: decoded where it lies in the read stage when it came whole, put
// together from pieces when it did not; a malformed one drops the stream either way.
TEST(TcpHeaderRead, AHeaderArrivingInPiecesIsPutTogether)
{
	tcp_test::SinkPair p(0, false);
	p.b->attach(p.fds[1]);
	Received got;
	got.post(*p.b, 2, 64);
	std::string text = "split header";
	uint8_t frame[kWireHeaderSize + 64];
	WireHeader h;
	h.op = WireOp::msg;
	h.size = text.size();
	encode_header(h, frame);
	memcpy(frame + kWireHeaderSize, text.data(), text.size());
	size_t len = kWireHeaderSize + text.size();
	for (size_t i = 0; i < len; i++) { // one byte per read
		ASSERT_EQ(1, write(p.fds[0], frame + i, 1));
		p.b->progress_rx();
	}
	// Then one whole, in one read.
	ASSERT_EQ(static_cast<ssize_t>(len), write(p.fds[0], frame, len));
	p.b->progress_rx();
	ASSERT_EQ(2u, p.ob.received.size());
	EXPECT_EQ(text, got.message(p.ob, 0));
	EXPECT_EQ(text, got.message(p.ob, 1));
	EXPECT_EQ(0, p.ob.errors + p.ob.lost);
}

// The short form (framed sends, injects at once) in pieces, whole, and mixed with full
// headers in one read: each header's first bytes say how long it is.
TEST(TcpHeaderRead, ShortHeadersInPiecesAndBesideFullOnes)
{
	tcp_test::SinkPair p(0, false);
	p.b->attach(p.fds[1]);
	Received got;
	got.post(*p.b, 4, 64);
	std::string text = "short header";
	uint8_t short_frame[kShortHeaderSize + 64];
	encode_short_msg_header(static_cast<uint32_t>(text.size()), short_frame);
	memcpy(short_frame + kShortHeaderSize, text.data(), text.size());
	size_t short_len = kShortHeaderSize + text.size();
	for (size_t i = 0; i < short_len; i++) { // one byte per read
		ASSERT_EQ(1, write(p.fds[0], short_frame + i, 1));
		p.b->progress_rx();
	}
	std::string other = "full header";
	uint8_t full_frame[kWireHeaderSize + 64];
	WireHeader h;
	h.op = WireOp::msg;
	h.size = other.size();
	encode_header(h, full_frame);
	memcpy(full_frame + kWireHeaderSize, other.data(), other.size());
	size_t full_len = kWireHeaderSize + other.size();
	std::vector<uint8_t> both(short_frame, short_frame + short_len);
	both.insert(both.end(), full_frame, full_frame + full_len);
	both.insert(both.end(), short_frame, short_frame + short_len);
	ASSERT_EQ(static_cast<ssize_t>(both.size()), write(p.fds[0], both.data(), both.size()));
	p.b->progress_rx();
	ASSERT_EQ(4u, p.ob.received.size());
	EXPECT_EQ(text, got.message(p.ob, 0));
	EXPECT_EQ(text, got.message(p.ob, 1));
	EXPECT_EQ(other, got.message(p.ob, 2));
	EXPECT_EQ(text, got.message(p.ob, 3));
	EXPECT_EQ(0, p.ob.errors + p.ob.lost);
}

TEST(TcpHeaderRead, AMalformedHeaderDropsTheStreamWholeOrInPieces)
{
	for (bool pieces : {false, true}) {
		tcp_test::SinkPair p(0, false);
		p.b->attach(p.fds[1]);
		Received got;
		got.post(*p.b, 1, 64);
		uint8_t frame[kWireHeaderSize + 8] = {};
		WireHeader h;
		h.op = WireOp::msg;
		h.size = 8;
		encode_header(h, frame);
		frame[0] = 77; // unknown version
		if (pieces) {
			ASSERT_EQ(10, write(p.fds[0], frame, 10));
			p.b->progress_rx();
			EXPECT_EQ(0, p.ob.lost);
			ASSERT_EQ(static_cast<ssize_t>(sizeof(frame) - 10),
				  write(p.fds[0], frame + 10, sizeof(frame) - 10));
		} else {
			ASSERT_EQ(static_cast<ssize_t>(sizeof(frame)),
				  write(p.fds[0], frame, sizeof(frame)));
		}
		p.b->progress_rx();
		EXPECT_EQ(1, p.ob.lost) << pieces;
		EXPECT_TRUE(p.ob.received.empty() ||
			    p.ob.errors == static_cast<int>(p.ob.received.size()))
			<< pieces; // only the posted receive, cancelled
	}
}
