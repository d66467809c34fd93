// Finding 5 of issue 15: sends queued for a peer that never accepts must not take the
// endpoint's send resources from its other peers. One endpoint sends to a listener that never
// answers the CM request and to a healthy rxm peer at the same time; the healthy peer must keep
// receiving (every message checked), the stuck peer gets -FI_EAGAIN for itself and, once its
// connection times out (FI_OFI_RXM_CONN_TIMEOUT, set short by main), FI_ETIMEDOUT completions.
#include "test/badinput/fabric_harness.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kConnTimeoutSeconds = 8;      // main() sets FI_OFI_RXM_CONN_TIMEOUT to this
constexpr auto kAttack = std::chrono::seconds(3); // well inside the connection timeout
constexpr size_t kMsgSize = 64;
constexpr size_t kWindow = 32;              // healthy sends and receives kept in flight
// Counted from 1 s into the attack, once the stuck peer had every chance to take what it can:
// before the fix the healthy peer then got nothing until the timeout (the stuck sends held the
// whole bounce-buffer pool; about 1900 messages got through before that, all in the first
// moments); a loaded 2-core machine still moves tens of thousands of small messages in 2 s.
constexpr auto kSettle = std::chrono::seconds(1);
constexpr uint64_t kHealthyMin = 1000;

// A socket that listens but never accepts: TCP connects (the kernel completes the handshake
// into the backlog), no CM answer ever comes.
int never_accepting_listener(uint16_t *port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t len = sizeof(sin);
	if (bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) || listen(fd, 4) ||
	    getsockname(fd, reinterpret_cast<sockaddr *>(&sin), &len)) {
		close(fd);
		return -1;
	}
	*port = ntohs(sin.sin_port);
	return fd;
}

void fill(uint8_t *buf, uint64_t seq)
{
	for (size_t i = 0; i < kMsgSize; i++)
		buf[i] = static_cast<uint8_t>(seq * 31 + i);
	memcpy(buf, &seq, sizeof(seq));
}

bool check(const uint8_t *buf, uint64_t seq)
{
	uint8_t want[kMsgSize];
	fill(want, seq);
	return memcmp(buf, want, kMsgSize) == 0;
}

TEST(ShareSend, NeverAcceptingPeerDoesNotBlockOthers)
{
	fi_info *info = harness::rdm_info(FI_MSG);
	ASSERT_NE(nullptr, info);
	{
		harness::RdmPair pair(info);
		ASSERT_TRUE(pair.ok);
		uint16_t port = 0;
		int listener = never_accepting_listener(&port);
		ASSERT_GE(listener, 0);
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_port = htons(port);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		fi_addr_t stuck = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(1, fi_av_insert(pair.a.av, &sin, 1, &stuck, 0, nullptr));

		// Contexts tell the completions apart: stuck sends point into stuck_ctx, healthy
		// sends and receives carry their slot.
		static char stuck_ctx;
		std::vector<uint8_t> tx(kWindow * kMsgSize), rx(kWindow * kMsgSize);
		std::vector<uint64_t> tx_seq(kWindow), rx_seq(kWindow);
		std::vector<bool> tx_busy(kWindow, false);
		uint8_t stuck_buf[kMsgSize] = {};
		uint64_t next_send = 0, next_recv_post = 0, received = 0, stuck_accepted = 0;
		uint64_t stuck_eagain = 0, stuck_timedout = 0, bad = 0, out_of_order = 0;

		auto post_recv = [&](size_t slot) {
			rx_seq[slot] = next_recv_post++;
			return fi_recv(pair.b.ep, &rx[slot * kMsgSize], kMsgSize, nullptr,
				       pair.a_at_b, &rx[slot * kMsgSize]);
		};
		for (size_t i = 0; i < kWindow; i++)
			ASSERT_EQ(0, post_recv(i));

		auto handle = [&](harness::Side &side) {
			side.poll();
			while (!side.done.empty()) {
				harness::Completion c = side.done.front();
				side.done.pop_front();
				if (c.context == &stuck_ctx) {
					if (c.error && c.err == FI_ETIMEDOUT)
						stuck_timedout++;
					else
						bad++;
					continue;
				}
				uint8_t *p = static_cast<uint8_t *>(c.context);
				if (p >= tx.data() && p < tx.data() + tx.size()) {
					size_t slot = (p - tx.data()) / kMsgSize;
					tx_busy[slot] = false;
					if (c.error)
						bad++;
				} else if (p >= rx.data() && p < rx.data() + rx.size()) {
					size_t slot = (p - rx.data()) / kMsgSize;
					if (c.error || !check(p, received))
						bad++;
					// Receives complete in the order posted; each carries the next sequence.
					if (rx_seq[slot] != received)
						out_of_order++;
					received++;
					EXPECT_EQ(0, post_recv(slot));
				} else {
					bad++;
				}
			}
		};

		auto attack_start = Clock::now();
		auto attack_end = attack_start + kAttack;
		uint64_t received_at_settle = 0;
		bool settled = false;
		while (Clock::now() < attack_end) {
			if (!settled && Clock::now() >= attack_start + kSettle) {
				settled = true;
				received_at_settle = received;
			}
			ssize_t r = fi_send(pair.a.ep, stuck_buf, kMsgSize, nullptr, stuck, &stuck_ctx);
			if (r == 0)
				stuck_accepted++;
			else if (r == -FI_EAGAIN)
				stuck_eagain++;
			else
				bad++;
			for (size_t slot = 0; slot < kWindow; slot++) {
				if (tx_busy[slot])
					continue;
				uint8_t *p = &tx[slot * kMsgSize];
				fill(p, next_send);
				if (fi_send(pair.a.ep, p, kMsgSize, nullptr, pair.b_at_a, p) != 0)
					break; // -FI_EAGAIN: retried after progress
				tx_seq[slot] = next_send++;
				tx_busy[slot] = true;
			}
			handle(pair.a);
			handle(pair.b);
		}
		uint64_t received_in_attack = received - received_at_settle;
		printf("attack %llds: healthy peer received %llu after the first %llds (%llu in all, "
		       "sent %llu), stuck peer accepted %llu, -FI_EAGAIN %llu\n",
		       static_cast<long long>(kAttack.count()),
		       static_cast<unsigned long long>(received_in_attack),
		       static_cast<long long>(kSettle.count()), static_cast<unsigned long long>(received),
		       static_cast<unsigned long long>(next_send),
		       static_cast<unsigned long long>(stuck_accepted),
		       static_cast<unsigned long long>(stuck_eagain));
		EXPECT_GE(received_in_attack, kHealthyMin)
			<< "sends to the healthy peer were starved by the stuck one";
		EXPECT_GT(stuck_eagain, 0u) << "the stuck peer was never held to a share";
		EXPECT_GT(stuck_accepted, 0u);

		// The stuck sends end with FI_ETIMEDOUT once the connection times out; the healthy
		// peer's remaining messages all arrive.
		auto deadline = Clock::now() + std::chrono::seconds(kConnTimeoutSeconds + 15);
		while ((stuck_timedout < stuck_accepted || received < next_send) &&
		       Clock::now() < deadline) {
			handle(pair.a);
			handle(pair.b);
		}
		EXPECT_EQ(stuck_accepted, stuck_timedout) << "stuck sends did not all time out";
		EXPECT_EQ(next_send, received);
		EXPECT_EQ(0u, bad);
		EXPECT_EQ(0u, out_of_order);
		// Cancel what is still posted so the endpoint closes with nothing in flight.
		for (size_t i = 0; i < kWindow; i++)
			fi_cancel(&pair.b.ep->fid, &rx[i * kMsgSize]);
		close(listener);
	}
	fi_freeinfo(info);
}

} // namespace

int main(int argc, char **argv)
{
	// Short enough that the stuck sends' FI_ETIMEDOUT arrives within the test, long enough
	// that the attack phase runs entirely before it.
	setenv("FI_OFI_RXM_CONN_TIMEOUT", std::to_string(kConnTimeoutSeconds).c_str(), 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
