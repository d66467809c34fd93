// The read stage: a message that fits the stage arrives with one read system call (counted by
// interposing libc's recv and readv in this test program), whatever its size up to the stage;
// bytes read ahead and left waiting for receives are delivered later without reading again.
#undef _FORTIFY_SOURCE // recv must stay the plain libc symbol this file replaces
#include "prov/tcp/tcp_connection.h"
#include "prov/tcp/test/tcp_sink_pair.h"

#include <rdma/fi_errno.h>

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

using namespace tcp;

namespace {
bool counting = false;
int read_calls = 0;
// Bytes the socket calls put into the receivers' own buffers (inside [direct_lo,
// direct_hi)) and anywhere else (the read stage, whose bytes are then copied out).
size_t direct_bytes = 0, staged_bytes = 0;
const uint8_t *direct_lo = nullptr, *direct_hi = nullptr;

void count_landing(const struct iovec *iov, int count, ssize_t got)
{
	for (int i = 0; i < count && got > 0; i++) {
		size_t n = std::min<size_t>(iov[i].iov_len, static_cast<size_t>(got));
		auto *base = static_cast<const uint8_t *>(iov[i].iov_base);
		(base >= direct_lo && base < direct_hi ? direct_bytes : staged_bytes) += n;
		got -= static_cast<ssize_t>(n);
	}
}
} // namespace

// Count (while a test asks), then do what libc does.
extern "C" ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	read_calls += counting;
	ssize_t n = syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
	if (counting && !(flags & MSG_PEEK)) {
		iovec one{buf, len};
		count_landing(&one, 1, n);
	}
	return n;
}

extern "C" ssize_t readv(int fd, const struct iovec *iov, int count)
{
	read_calls += counting;
	ssize_t n = syscall(SYS_readv, fd, iov, count);
	if (counting)
		count_landing(iov, count, n);
	return n;
}

namespace {

// Room for a whole window in the socket before the receiver reads.
struct Pair : tcp_test::SinkPair {
	Pair() : SinkPair(1 << 20) {}
};

PostArgs message(const void *buf, size_t len, iovec *iov)
{
	*iov = {const_cast<void *>(buf), len};
	PostArgs args;
	args.iov = iov;
	args.count = 1;
	args.op_flags = FI_COMPLETION;
	return args;
}

std::vector<uint8_t> pattern(size_t len, unsigned seed)
{
	std::vector<uint8_t> v(len);
	for (size_t i = 0; i < len; i++)
		v[i] = static_cast<uint8_t>(i * 7 + seed);
	return v;
}

} // namespace

// rxm over tcp sends its 56-byte header in front of the payload, into receive buffers of
// 56 + 64 KiB: the sizes below are the core messages of 1 B-16 KiB rxm messages. Before,
// a 4 KiB one (4152 bytes, 4200 with tcp's header) overflowed the 4 KiB stage and cost a
// second recv for its last 104 bytes.
TEST(ConnectionStage, AMessageThatFitsTheStageCostsOneRead)
{
	for (size_t payload : {1u, 64u, 1024u, 2048u, 4096u, 8192u, 16384u}) {
		SCOPED_TRACE(payload);
		Pair p;
		std::vector<uint8_t> out = pattern(56 + payload, static_cast<unsigned>(payload));
		std::vector<uint8_t> in(56 + 65536);
		iovec r{in.data(), in.size()};
		ASSERT_EQ(0, p.b->post_recv(&r, 1, in.data(), FI_COMPLETION));
		iovec s;
		ASSERT_EQ(0, p.a->post_msg(message(out.data(), out.size(), &s)));
		ASSERT_TRUE(p.a->tx_idle()) << "the whole message is in the socket";

		read_calls = 0;
		counting = true;
		p.b->progress_rx();
		counting = false;
		ASSERT_EQ(1u, p.ob.received.size());
		EXPECT_EQ(out.size(), p.ob.lengths[0]);
		EXPECT_TRUE(std::equal(out.begin(), out.end(), in.begin()));
		EXPECT_EQ(1, read_calls);
		EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
	}
}

// A window of small messages comes in with one read; with one receive posted at a time (rxm
// posts a few shared buffers and reposts each after use) the rest waits with the connection
// and each post delivers the next message from it, in order and intact, without another read.
TEST(ConnectionStage, MessagesReadAheadAreDeliveredWithoutReadingAgain)
{
	Pair p;
	constexpr int kCount = 64;
	std::vector<std::vector<uint8_t>> out;
	std::vector<iovec> iovs(kCount + 1);
	for (int i = 0; i <= kCount; i++) {
		// The last one only keeps the stage from running dry at the 64th.
		out.push_back(pattern(56 + 8 + i, static_cast<unsigned>(i)));
		ASSERT_EQ(0, p.a->post_msg(message(out[i].data(), out[i].size(), &iovs[i])));
	}
	ASSERT_TRUE(p.a->tx_idle());

	std::vector<std::vector<uint8_t>> in(kCount, std::vector<uint8_t>(256));
	read_calls = 0;
	counting = true;
	for (int i = 0; i < kCount; i++) {
		iovec r{in[i].data(), in[i].size()};
		// A post resumes a stream whose next message waits for a receive.
		ASSERT_EQ(0, p.b->post_recv(&r, 1, in[i].data(), FI_COMPLETION));
		if (i == 0)
			p.b->progress_rx();
		ASSERT_EQ(size_t(i + 1), p.ob.received.size());
	}
	counting = false;
	EXPECT_EQ(1, read_calls) << "65 messages (~9 KiB) fit one read of the stage";
	for (int i = 0; i < kCount; i++) {
		EXPECT_EQ(in[i].data(), p.ob.received[i]);
		ASSERT_EQ(out[i].size(), p.ob.lengths[i]);
		EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(), in[i].begin())) << i;
	}
	EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
}

// A stream of large messages (rxm's 8-32 KiB eager messages: 56-byte header + payload) with
// receives posted for all of them: after the first read of the stage, each payload goes
// straight from the socket into its receive, and only the next message's header (with a
// few hundred bytes behind it) passes through the stage, one read system call per message.
// With a 4 KiB stage tail behind every payload, ~4 KiB of each message was read into the
// stage and copied out again (16 KiB: 26% of its bytes).
TEST(ConnectionStage, AStreamOfLargeMessagesIsMostlyNotCopied)
{
	for (size_t payload : {8192u, 16384u, 32768u}) {
		SCOPED_TRACE(payload);
		constexpr size_t kCount = 24;
		tcp_test::SinkPair p(2 << 20);
		std::vector<uint8_t> in(kCount * (56 + 65536));
		std::vector<std::vector<uint8_t>> out;
		std::vector<iovec> iovs(kCount);
		for (size_t i = 0; i < kCount; i++) {
			iovec r{in.data() + i * (56 + 65536), 56 + 65536};
			ASSERT_EQ(0, p.b->post_recv(&r, 1, r.iov_base, FI_COMPLETION));
			out.push_back(pattern(56 + payload, static_cast<unsigned>(i)));
			ASSERT_EQ(0, p.a->post_msg(message(out[i].data(), out[i].size(), &iovs[i])));
		}
		ASSERT_TRUE(p.a->tx_idle()) << "the whole stream is in the socket";

		direct_lo = in.data();
		direct_hi = in.data() + in.size();
		read_calls = 0;
		direct_bytes = staged_bytes = 0;
		counting = true;
		while (p.ob.received.size() < kCount && p.b->progress_rx()) {
		}
		counting = false;
		ASSERT_EQ(kCount, p.ob.received.size());
		for (size_t i = 0; i < kCount; i++) {
			ASSERT_EQ(out[i].size(), p.ob.lengths[i]);
			EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(),
					       in.begin() + i * (56 + 65536))) << i;
		}
		size_t total = kCount * (48 + 56 + payload);
		EXPECT_EQ(total, direct_bytes + staged_bytes);
		// The first read fills the whole stage (16.5 KiB); after it, at most 1 KiB a message.
		EXPECT_LE(staged_bytes, 16896 + kCount * 1024)
		    << staged_bytes / kCount << " bytes a message went through the stage";
		EXPECT_LE(read_calls, static_cast<int>(kCount) + 2);
		EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
	}
}

// The same stream sent one message at a time, the reader catching up with the sender after
// each (fi_bw at 32 KiB: the reader spins faster than the sender writes): a message's read
// then brings no tail, and the next header is read on its own. That read asks for a tail's
// worth after a large message, not a whole stage, so the next large payload still goes
// straight to its receive. With a whole stage its first 16 KiB went through the stage and
// were copied out, for every such message.
TEST(ConnectionStage, AfterALargeMessageTheNextHeaderReadIsSmall)
{
	constexpr size_t kCount = 8, kPayload = 32768;
	tcp_test::SinkPair p(2 << 20);
	std::vector<uint8_t> in(kCount * (56 + 65536));
	std::vector<std::vector<uint8_t>> out;
	std::vector<iovec> iovs(kCount);
	direct_lo = in.data();
	direct_hi = in.data() + in.size();
	direct_bytes = staged_bytes = 0;
	for (size_t i = 0; i < kCount; i++) {
		iovec r{in.data() + i * (56 + 65536), 56 + 65536};
		ASSERT_EQ(0, p.b->post_recv(&r, 1, r.iov_base, FI_COMPLETION));
		out.push_back(pattern(56 + kPayload, static_cast<unsigned>(i)));
		ASSERT_EQ(0, p.a->post_msg(message(out[i].data(), out[i].size(), &iovs[i])));
		ASSERT_TRUE(p.a->tx_idle());
		counting = true;
		for (int spin = 0; spin < 100 && p.ob.received.size() <= i; spin++)
			p.b->progress_rx();
		counting = false;
		ASSERT_EQ(i + 1, p.ob.received.size());
		ASSERT_EQ(out[i].size(), p.ob.lengths[i]);
		EXPECT_TRUE(std::equal(out[i].begin(), out[i].end(),
				       in.begin() + i * (56 + 65536))) << i;
	}
	// The first header read takes a whole stage; each later one at most a tail.
	EXPECT_LE(staged_bytes, 16896 + (kCount - 1) * 512)
	    << staged_bytes / kCount << " bytes a message went through the stage";
	EXPECT_EQ(0, p.oa.errors + p.ob.errors + p.oa.lost + p.ob.lost);
}
