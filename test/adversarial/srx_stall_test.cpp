// Finding 3 of issue 15: connections that send a message header and stop. Eight raw-socket
// attackers (more than the 4 receive buffers ofi_rxm posts to its shared receive context)
// complete the CM exchange with valid rxm CM data, send the tcp header of an rxm eager
// message announcing 60 KiB + 7 bytes and stop: half after the header alone, half after the
// rxm header and 1000 bytes of payload. Meanwhile a legitimate tcp;ofi_rxm client sends the
// same server 20 messages (64 B and 60 KiB alternating); every one must arrive, verified,
// within 15 s. After the attackers close, the server's fds and RSS return to baseline.
//
// A ninth, slow but honest raw peer goes first: it sends 30 of the 64 bytes of a message and
// waits while the legitimate traffic needs its buffer, then sends the rest; its message must
// arrive intact (a stream that gave its buffer back resumes where it stopped).
//
// srx_stall_nosrx.sh runs the same cases with FI_OFI_RXM_USE_SRX=0 (per-connection buffers).
#include "config.h"
#include "src/registry.h"
#include "test/adversarial/accept_legit_client.h"
#include "test/adversarial/raw_peer.h"
#include "test/leaks/process_usage.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;

namespace {

using adversarial::RdmPeer;
using process_usage::open_fd_count;
using process_usage::resident_kib;

constexpr int kStallers = 8;
constexpr uint32_t kMessages = 20;
constexpr int kClientSeconds = 15;
constexpr size_t kAnnounced = 60 * 1024 + 7;
constexpr long kRssSlackKib = 4096;

// Attackers in a thread (RawPeer blocks) while the test thread serves.
class Stallers {
public:
	Stallers(const sockaddr_in &server, size_t partial_bytes) : server_(server)
	{
		for (size_t k = 0; k < adversarial::series_message_size(kSlowIndex); ++k)
			slow_message_.push_back(adversarial::series_byte(kSlowIndex, k));
		thread_ = std::thread([this, partial_bytes] { run(partial_bytes); });
	}
	~Stallers() { release(); }
	int stalled() const { return stalled_.load(); }
	int failed() const { return failed_.load(); }
	// The slow peer sends the rest of its message.
	void finish_slow() { finish_slow_ = true; }
	bool slow_done() const { return slow_done_.load(); }
	static constexpr uint32_t kSlowIndex = 1000;
	void release()
	{
		leave_ = true;
		if (thread_.joinable())
			thread_.join();
	}

private:
	// Connects from 127.0.0.(2 + i), claiming its own address (an honest name).
	int connect_peer(adversary::RawPeer &peer, int i)
	{
		sockaddr_in src{};
		src.sin_family = AF_INET;
		src.sin_addr.s_addr = htonl(0x7f000002 + uint32_t(i));
		int ret = peer.connect_to(reinterpret_cast<const sockaddr *>(&server_),
					  sizeof(server_), reinterpret_cast<const sockaddr *>(&src),
					  sizeof(src));
		sockaddr_in claimed{};
		socklen_t len = sizeof(claimed);
		if (!ret)
			getsockname(peer.fd(), reinterpret_cast<sockaddr *>(&claimed), &len);
		if (!ret)
			ret = peer.rxm_handshake(reinterpret_cast<sockaddr *>(&claimed), len,
						 0x5a110000 + uint64_t(i), 10000);
		return ret;
	}

	void run(size_t partial_bytes)
	{
		adversary::RawPeer slow;
		constexpr size_t kSlowFirst = 30;
		rxm::WireHeader slow_header;
		slow_header.op = rxm::WireOp::eager;
		slow_header.total_len = slow_message_.size();
		slow_header.msg_id = 1;
		int ret = connect_peer(slow, kStallers);
		if (!ret)
			ret = slow.send_rxm(slow_header, slow_message_.data(), slow_message_.size(),
					    rxm::kWireHeaderSize + kSlowFirst);
		if (ret)
			failed_++;
		// Give the server time to read it (so it holds a shared buffer) before the others.
		std::this_thread::sleep_for(std::chrono::milliseconds(300));
		std::vector<adversary::RawPeer> peers(kStallers);
		std::vector<uint8_t> payload(kAnnounced, 0xee);
		for (int i = 0; i < kStallers; ++i) {
			ret = connect_peer(peers[i], i);
			if (!ret) {
				rxm::WireHeader h;
				h.op = rxm::WireOp::eager;
				h.total_len = kAnnounced;
				h.msg_id = 1;
				// Even ones stop after the tcp header, odd ones within the payload.
				size_t send_only = i % 2 ? rxm::kWireHeaderSize + partial_bytes : 0;
				ret = peers[i].send_rxm(h, payload.data(), payload.size(), send_only);
			}
			if (ret)
				failed_++;
			else
				stalled_++;
		}
		while (!leave_ && !finish_slow_)
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		if (finish_slow_ && !leave_) {
			slow.send_bytes(slow_message_.data() + kSlowFirst,
					slow_message_.size() - kSlowFirst);
			slow_done_ = true;
		}
		while (!leave_)
			std::this_thread::sleep_for(std::chrono::milliseconds(20));
		slow.close_now();
		for (auto &peer : peers)
			peer.close_now();
	}

	sockaddr_in server_;
	std::thread thread_;
	std::atomic<int> stalled_{0};
	std::atomic<int> failed_{0};
	std::atomic<bool> leave_{false};
	std::atomic<bool> finish_slow_{false};
	std::atomic<bool> slow_done_{false};
	std::vector<uint8_t> slow_message_;
};

template <typename Done> bool serve_until(RdmPeer &server, int seconds, Done done)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
	while (std::chrono::steady_clock::now() < deadline) {
		server.serve_once();
		if (done())
			return true;
	}
	return done();
}

void expect_served(const adversarial::ClientOutcome &outcome, uint32_t count = kMessages)
{
	EXPECT_TRUE(outcome.client_ok) << "the legitimate client did not get its series through";
	EXPECT_EQ(outcome.received, count);
	EXPECT_EQ(outcome.bad, 0u);
	EXPECT_LT(outcome.seconds, kClientSeconds);
	printf("  legitimate client: %zu messages verified in %.2f s\n", outcome.received,
	       outcome.seconds);
}

void run_attack(size_t partial_bytes)
{
	RdmPeer server;
	ASSERT_TRUE(server.ok()) << server.error();
	std::vector<char> name = server.name();
	ASSERT_GE(name.size(), sizeof(sockaddr_in));
	sockaddr_in addr;
	memcpy(&addr, name.data(), sizeof(addr));
	// A first client warms the server up (pools, buffers): the baseline is a serving server.
	expect_served(adversarial::serve_legit_client(server, 4, kClientSeconds), 4);
	serve_until(server, 1, [] { return false; });
	int base_fds = open_fd_count();
	long base_rss = resident_kib();

	Stallers stallers(addr, partial_bytes);
	ASSERT_TRUE(serve_until(server, 20, [&] {
		return stallers.stalled() + stallers.failed() >= kStallers;
	}));
	ASSERT_EQ(stallers.failed(), 0);
	// Let the server read what they sent: their headers take the shared buffers.
	serve_until(server, 1, [] { return false; });

	expect_served(adversarial::serve_legit_client(server, kMessages, kClientSeconds));

	stallers.finish_slow();
	EXPECT_TRUE(serve_until(server, 10, [&] { return server.got(Stallers::kSlowIndex); }))
		<< "the slow peer's message did not arrive intact";
	EXPECT_EQ(server.bad(), 0u);

	stallers.release();
	bool back = serve_until(server, 10, [&] {
		return open_fd_count() <= base_fds && resident_kib() <= base_rss + kRssSlackKib;
	});
	EXPECT_TRUE(back) << "after the attack: fds " << open_fd_count() - base_fds
			  << " above baseline, RSS " << resident_kib() - base_rss << " KiB";
}

TEST(SrxStall, StalledHeadersDoNotStarveOthers)
{
	run_attack(0);
}

TEST(SrxStall, StalledPayloadsDoNotStarveOthers)
{
	run_attack(1000);
}

} // namespace
