// Finding 7 of issue 15: unexpected messages were buffered without bound. An attacker rxm
// endpoint sends tagged messages nobody receives for a few seconds. The server's memory must
// stay within its per-peer budget (FI_OFI_RXM_UNEXPECTED_BUDGET, 1 MiB here) plus slack while a
// legitimate client's messages keep arriving (every one checked); afterwards the server posts
// receives for the attacker's tag and gets every message it accepted, in order, intact: the
// attacker was throttled (its data waited in the transport), nothing was dropped.
#include "test/badinput/fabric_harness.h"
#include "test/leaks/process_usage.h"

#include <rdma/fi_tagged.h>

#include <gtest/gtest.h>

#include <netinet/in.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kBudget = 1 << 20;          // main() sets FI_OFI_RXM_UNEXPECTED_BUDGET
constexpr auto kAttack = std::chrono::seconds(3);
constexpr size_t kAttackSize = 16384;         // eager: copied into the unexpected queue
constexpr uint64_t kAttackTag = 7, kLegitTag = 5;
constexpr size_t kLegitSize = 256;
// RSS may grow by the budget plus this (allocator and page granularity, CQ entries, the
// legitimate traffic's buffers). Unbounded, 3 s of attack grow it by 100+ MiB on loopback.
constexpr long kSlackKib = 12 * 1024;

void fill(uint8_t *buf, size_t len, uint64_t seq, uint8_t salt)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = static_cast<uint8_t>(seq * 13 + i + salt);
	memcpy(buf, &seq, sizeof(seq));
}

bool check(const uint8_t *buf, size_t len, uint64_t seq, uint8_t salt)
{
	std::vector<uint8_t> want(len);
	fill(want.data(), len, seq, salt);
	return memcmp(buf, want.data(), len) == 0;
}

fi_addr_t insert(harness::Side &at, harness::Side &peer)
{
	char name[128];
	size_t len = sizeof(name);
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	if (fi_getname(&peer.ep->fid, name, &len) == 0)
		fi_av_insert(at.av, name, 1, &addr, 0, nullptr);
	return addr;
}

TEST(ShareUnexpected, FloodOfUnreceivedMessagesIsThrottledNotDropped)
{
	fi_info *info = harness::rdm_info(FI_MSG | FI_TAGGED);
	ASSERT_NE(nullptr, info);
	{
		harness::Side server(info), client(info), attacker(info);
		ASSERT_TRUE(server.ok && client.ok && attacker.ok);
		fi_addr_t server_at_client = insert(client, server);
		fi_addr_t server_at_attacker = insert(attacker, server);
		ASSERT_NE(FI_ADDR_NOTAVAIL, server_at_client);
		ASSERT_NE(FI_ADDR_NOTAVAIL, server_at_attacker);

		constexpr size_t kWindow = 16;
		std::vector<uint8_t> ltx(kWindow * kLegitSize), lrx(kWindow * kLegitSize);
		std::vector<bool> ltx_busy(kWindow, false);
		std::vector<uint8_t> atx(kWindow * kAttackSize);
		std::vector<bool> atx_busy(kWindow, false);
		uint64_t lsent = 0, lreceived = 0, asent = 0, bad = 0;
		for (size_t i = 0; i < kWindow; i++)
			ASSERT_EQ(0, fi_trecv(server.ep, &lrx[i * kLegitSize], kLegitSize, nullptr,
					      FI_ADDR_UNSPEC, kLegitTag, 0, &lrx[i * kLegitSize]));

		// Warm up both connections before the baseline, so it includes their buffers.
		auto step = [&](bool attack) {
			for (size_t s = 0; s < kWindow; s++) {
				if (ltx_busy[s])
					continue;
				uint8_t *p = &ltx[s * kLegitSize];
				fill(p, kLegitSize, lsent, 1);
				if (fi_tsend(client.ep, p, kLegitSize, nullptr, server_at_client,
					     kLegitTag, p))
					break;
				ltx_busy[s] = true;
				lsent++;
			}
			for (size_t s = 0; attack && s < kWindow; s++) {
				if (atx_busy[s])
					continue;
				uint8_t *p = &atx[s * kAttackSize];
				fill(p, kAttackSize, asent, 2);
				if (fi_tsend(attacker.ep, p, kAttackSize, nullptr, server_at_attacker,
					     kAttackTag, p))
					break;
				atx_busy[s] = true;
				asent++;
			}
			client.poll();
			attacker.poll();
			server.poll();
			for (auto *side : {&client, &attacker}) {
				while (!side->done.empty()) {
					auto c = side->done.front();
					side->done.pop_front();
					bad += c.error;
					uint8_t *p = static_cast<uint8_t *>(c.context);
					if (p >= ltx.data() && p < ltx.data() + ltx.size())
						ltx_busy[(p - ltx.data()) / kLegitSize] = false;
					else if (p >= atx.data() && p < atx.data() + atx.size())
						atx_busy[(p - atx.data()) / kAttackSize] = false;
					else if (c.context != static_cast<void *>(&atx_busy))
						bad++; // &atx_busy: the first message, sent before the loop
				}
			}
			while (!server.done.empty()) {
				auto c = server.done.front();
				server.done.pop_front();
				uint8_t *p = static_cast<uint8_t *>(c.context);
				if (c.error || !check(p, kLegitSize, lreceived, 1))
					bad++;
				lreceived++;
				EXPECT_EQ(0, fi_trecv(server.ep, p, kLegitSize, nullptr, FI_ADDR_UNSPEC,
						      kLegitTag, 0, p));
			}
		};
		// One attacker message connects it; both connections are up before the baseline.
		uint8_t hello[kAttackSize];
		fill(hello, kAttackSize, 0, 2);
		ASSERT_EQ(0, fi_tsend(attacker.ep, hello, kAttackSize, nullptr, server_at_attacker,
				      kAttackTag, &atx_busy));
		uint64_t attacker_first = 1; // 'hello' carries sequence 0
		asent = attacker_first;
		auto warm = Clock::now() + std::chrono::milliseconds(500);
		while (Clock::now() < warm)
			step(false);
		attacker.done.clear();
		long rss_before = process_usage::resident_kib();

		long rss_peak = rss_before;
		uint64_t legit_before = lreceived;
		auto end = Clock::now() + kAttack;
		while (Clock::now() < end) {
			step(true);
			long rss = process_usage::resident_kib();
			if (rss > rss_peak)
				rss_peak = rss;
		}
		uint64_t legit_in_attack = lreceived - legit_before;
		printf("attack %llds: attacker handed %llu messages of %zu bytes (%.1f MiB) to its "
		       "endpoint; server RSS %ld -> peak %ld KiB (budget %zu KiB); legit client "
		       "received %llu\n",
		       static_cast<long long>(kAttack.count()), static_cast<unsigned long long>(asent),
		       kAttackSize, asent * kAttackSize / 1048576.0, rss_before, rss_peak,
		       kBudget / 1024, static_cast<unsigned long long>(legit_in_attack));
		EXPECT_LT(rss_peak - rss_before, static_cast<long>(kBudget / 1024) + kSlackKib)
			<< "unexpected messages grew the server beyond its budget";
		EXPECT_GT(legit_in_attack, 500u) << "the legitimate client was slowed";
		EXPECT_EQ(0u, bad);

		// Now receive everything the attacker sent: all of it, in order, intact.
		std::vector<uint8_t> big(kAttackSize);
		uint64_t got = 0;
		auto deadline = Clock::now() + std::chrono::seconds(20);
		bool posted = false;
		while (got < asent && Clock::now() < deadline) {
			if (!posted) {
				ASSERT_EQ(0, fi_trecv(server.ep, big.data(), big.size(), nullptr,
						      FI_ADDR_UNSPEC, kAttackTag, 0, big.data()));
				posted = true;
			}
			attacker.poll();
			client.poll();
			server.poll();
			while (!attacker.done.empty()) {
				bad += attacker.done.front().error;
				attacker.done.pop_front();
			}
			client.done.clear();
			while (!server.done.empty()) {
				auto c = server.done.front();
				server.done.pop_front();
				if (c.context != big.data()) {
					// A legit receive slot (still posted): not expected now.
					continue;
				}
				if (c.error || !check(big.data(), kAttackSize, got, 2)) {
					ADD_FAILURE() << "attacker message " << got << " lost or corrupted";
					bad++;
				}
				got++;
				posted = false;
			}
		}
		EXPECT_EQ(asent, got) << "messages of the throttled peer were dropped";
		EXPECT_EQ(0u, bad);
		long rss_after = process_usage::resident_kib();
		printf("after receiving all %llu: RSS %ld KiB\n", static_cast<unsigned long long>(got),
		       rss_after);
		for (size_t i = 0; i < kWindow; i++)
			fi_cancel(&server.ep->fid, &lrx[i * kLegitSize]);
	}
	fi_freeinfo(info);
}

} // namespace

int main(int argc, char **argv)
{
	setenv("FI_OFI_RXM_UNEXPECTED_BUDGET", std::to_string(kBudget).c_str(), 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
