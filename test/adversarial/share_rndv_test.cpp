// Finding 9 of issue 15: a rendezvous request whose reads the sender never serves must not hold
// the matched receive forever. A raw-socket attacker completes the CM exchange, sends an rxm
// rendezvous request matching a posted 1 MiB receive, reads the server's tcp read requests and
// never answers them. Within FI_OFI_RXM_RNDV_READ_TIMEOUT (set to 2 s by main) the receive must
// complete with FI_ETIMEDOUT, its buffer untouched, while a legitimate client keeps getting
// every message through, verified.
#include "test/adversarial/raw_peer.h"
#include "test/badinput/fabric_harness.h"

#include <rdma/fi_tagged.h>

#include <gtest/gtest.h>

#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kReadTimeoutSeconds = 2; // main() sets FI_OFI_RXM_RNDV_READ_TIMEOUT
// Bound on the error completion: the timeout plus generous slack for a loaded machine.
constexpr int kCompletionBoundSeconds = kReadTimeoutSeconds + 10;
constexpr uint64_t kVictimTag = 9, kLegitTag = 5;
constexpr size_t kRndvSize = 1 << 20;
constexpr size_t kLegitSize = 256;

void fill(uint8_t *buf, uint64_t seq)
{
	for (size_t i = 0; i < kLegitSize; i++)
		buf[i] = static_cast<uint8_t>(seq * 7 + i);
	memcpy(buf, &seq, sizeof(seq));
}

TEST(ShareRndv, UnservedRendezvousReadTimesOut)
{
	fi_info *info = harness::rdm_info(FI_MSG | FI_TAGGED);
	ASSERT_NE(nullptr, info);
	{
		harness::Side server(info), client(info);
		ASSERT_TRUE(server.ok && client.ok);
		sockaddr_in addr{};
		size_t len = sizeof addr;
		ASSERT_EQ(0, fi_getname(&server.ep->fid, &addr, &len));
		fi_addr_t server_at_client = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(1, fi_av_insert(client.av, &addr, 1, &server_at_client, 0, nullptr));

		std::vector<uint8_t> victim(kRndvSize, 0x5a);
		ASSERT_EQ(0, fi_trecv(server.ep, victim.data(), victim.size(), nullptr,
				      FI_ADDR_UNSPEC, kVictimTag, 0, victim.data()));

		std::atomic<int> attacker_result{1};
		std::atomic<int> read_requests{0};
		std::atomic<bool> stop{false};
		std::thread attacker([&] {
			adversary::RawPeer peer;
			int ret = peer.connect_to(reinterpret_cast<sockaddr *>(&addr), sizeof addr);
			if (!ret) {
				sockaddr_in claimed = addr;
				claimed.sin_port = htons(1); // a name nobody listens on
				ret = peer.rxm_handshake(reinterpret_cast<sockaddr *>(&claimed),
							 sizeof claimed, 0x9999, 10000);
			}
			if (!ret) {
				rxm::RndvSegment seg{0x10000, kRndvSize, 0x77};
				uint8_t payload[rxm::rndv_payload_size(1)];
				rxm::encode_rndv({&seg, 1}, payload);
				rxm::WireHeader h;
				h.op = rxm::WireOp::rndv_request;
				h.flags = rxm::wire_flag::tagged;
				h.tag = kVictimTag;
				h.total_len = kRndvSize;
				h.msg_id = 1;
				ret = peer.send_rxm(h, payload, sizeof payload);
			}
			attacker_result = ret;
			// Read what the server sends (its read requests) and never answer.
			while (!ret && !stop) {
				tcp::WireHeader fh;
				std::vector<uint8_t> body;
				int r = peer.recv_frame(&fh, &body, 100);
				if (r == 0 && fh.op == tcp::WireOp::read_request)
					read_requests++;
				else if (r && r != -FI_ETIMEDOUT)
					break; // the server closed the connection
			}
			while (!stop)
				std::this_thread::sleep_for(std::chrono::milliseconds(10));
		});

		// The legitimate client streams verified messages the whole time.
		constexpr size_t kWindow = 8;
		std::vector<uint8_t> tx(kWindow * kLegitSize), rx(kWindow * kLegitSize);
		std::vector<bool> tx_busy(kWindow, false);
		uint64_t sent = 0, received = 0, bad = 0;
		for (size_t i = 0; i < kWindow; i++)
			ASSERT_EQ(0, fi_trecv(server.ep, &rx[i * kLegitSize], kLegitSize, nullptr,
					      FI_ADDR_UNSPEC, kLegitTag, 0, &rx[i * kLegitSize]));
		bool victim_done = false;
		harness::Completion victim_completion;
		auto start = Clock::now();
		auto bound = start + std::chrono::seconds(kCompletionBoundSeconds);
		Clock::time_point victim_at{};
		while (Clock::now() < bound && !(victim_done && Clock::now() > victim_at +
						 std::chrono::milliseconds(500))) {
			for (size_t slot = 0; slot < kWindow; slot++) {
				if (tx_busy[slot])
					continue;
				fill(&tx[slot * kLegitSize], sent);
				if (fi_tsend(client.ep, &tx[slot * kLegitSize], kLegitSize, nullptr,
					     server_at_client, kLegitTag, &tx[slot * kLegitSize]))
					break;
				tx_busy[slot] = true;
				sent++;
			}
			client.poll();
			server.poll();
			while (!client.done.empty()) {
				auto c = client.done.front();
				client.done.pop_front();
				tx_busy[(static_cast<uint8_t *>(c.context) - tx.data()) / kLegitSize] = false;
				bad += c.error;
			}
			while (!server.done.empty()) {
				auto c = server.done.front();
				server.done.pop_front();
				if (c.context == victim.data()) {
					victim_done = true;
					victim_completion = c;
					victim_at = Clock::now();
					continue;
				}
				uint8_t *p = static_cast<uint8_t *>(c.context);
				uint8_t want[kLegitSize];
				fill(want, received);
				if (c.error || memcmp(p, want, kLegitSize))
					bad++;
				received++;
				EXPECT_EQ(0, fi_trecv(server.ep, p, kLegitSize, nullptr, FI_ADDR_UNSPEC,
						      kLegitTag, 0, p));
			}
		}
		double took = std::chrono::duration<double>(victim_at - start).count();
		stop = true;
		attacker.join();
		ASSERT_EQ(0, attacker_result.load());
		EXPECT_GT(read_requests.load(), 0) << "the server never asked the attacker to serve";
		ASSERT_TRUE(victim_done) << "the receive matched to an unserved rendezvous never "
					    "completed within " << kCompletionBoundSeconds << " s";
		printf("unserved rendezvous receive completed after %.2f s (timeout %d s); legit "
		       "client: %llu sent, %llu received\n", took, kReadTimeoutSeconds,
		       static_cast<unsigned long long>(sent), static_cast<unsigned long long>(received));
		EXPECT_TRUE(victim_completion.error);
		EXPECT_EQ(FI_ETIMEDOUT, victim_completion.err);
		EXPECT_GE(took, kReadTimeoutSeconds - 0.5);
		for (uint8_t b : victim)
			if (b != 0x5a) {
				ADD_FAILURE() << "the timed-out receive's buffer was written";
				break;
			}
		EXPECT_EQ(0u, bad);
		EXPECT_GT(received, 100u) << "the legitimate client was held up";
		// Whatever the client still has in flight arrives too.
		auto drain_until = Clock::now() + std::chrono::seconds(10);
		while (received < sent && Clock::now() < drain_until) {
			client.poll();
			server.poll();
			while (!server.done.empty()) {
				auto c = server.done.front();
				server.done.pop_front();
				uint8_t want[kLegitSize];
				fill(want, received);
				if (c.error || memcmp(c.context, want, kLegitSize))
					bad++;
				received++;
				EXPECT_EQ(0, fi_trecv(server.ep, c.context, kLegitSize, nullptr,
						      FI_ADDR_UNSPEC, kLegitTag, 0, c.context));
			}
			client.done.clear();
		}
		EXPECT_EQ(sent, received);
		EXPECT_EQ(0u, bad);
		for (size_t i = 0; i < kWindow; i++)
			fi_cancel(&server.ep->fid, &rx[i * kLegitSize]);
	}
	fi_freeinfo(info);
}

} // namespace

int main(int argc, char **argv)
{
	setenv("FI_OFI_RXM_RNDV_READ_TIMEOUT", std::to_string(kReadTimeoutSeconds).c_str(), 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
