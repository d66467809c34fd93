// Receiver overrun over tcp;ofi_rxm: a sends hundreds of mixed-size messages to b, which posts
// no receive buffers at first, while a keeps exchanging messages with a third endpoint c.
// Nothing may be lost (b eventually receives every message exactly once, data intact) and the
// flood must not block a's traffic with c. -FI_EAGAIN from a's sends to b is allowed (that is
// flow control), a hang is not. The domain runs with FI_RM_ENABLED (ofi_rxm's default),
// whose documented behaviour this is.
#include "test/badinput/fabric_harness.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMessages = 400;
const size_t kSizes[] = {8, 1000, 20000, 200000};

size_t size_of(size_t seq) { return kSizes[seq % 4]; }
uint8_t byte_of(size_t seq, size_t i) { return static_cast<uint8_t>(seq * 31 + i * 7); }

std::vector<uint8_t> message(size_t seq)
{
	std::vector<uint8_t> m(size_of(seq));
	for (size_t i = 0; i < m.size(); i++)
		m[i] = byte_of(seq, i);
	memcpy(m.data(), &seq, sizeof(seq));  // every size is >= 8
	return m;
}

TEST(ReceiverOverrun, NothingLostAndOtherPeersNotBlocked)
{
	fi_info *info = harness::rdm_info(FI_MSG);
	ASSERT_NE(nullptr, info);
	// What this checks is fi_domain(3)'s FI_RM_ENABLED promise: a receiving endpoint is not
	// overrun; messages wait (or the sender gets -FI_EAGAIN), they are not dropped.
	ASSERT_EQ(info->domain_attr->resource_mgmt, FI_RM_ENABLED);
	auto pair = std::make_unique<harness::RdmPair>(info);
	ASSERT_TRUE(pair->ok);
	harness::Side &a = pair->a, &b = pair->b;
	harness::Side c(info);
	ASSERT_TRUE(c.ok);
	char name[128];
	size_t len = sizeof(name);
	fi_addr_t c_at_a;
	ASSERT_EQ(0, fi_getname(&c.ep->fid, name, &len));
	ASSERT_EQ(1, fi_av_insert(a.av, name, 1, &c_at_a, 0, nullptr));

	auto progress = [&] { a.poll(); b.poll(); c.poll(); };
	std::vector<std::vector<uint8_t>> out(kMessages);
	std::vector<int> send_ctx(kMessages);
	size_t sent = 0, round_trips = 0;

	// One verified message to c; fails the test if it does not arrive in time.
	auto round_trip_with_c = [&] {
		static int rctx, sctx;
		std::vector<uint8_t> in(64), msg(64, 0x77);
		ASSERT_EQ(0, fi_recv(c.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx));
		ssize_t ret;
		auto until = Clock::now() + std::chrono::seconds(10);
		while ((ret = fi_send(a.ep, msg.data(), msg.size(), nullptr, c_at_a, &sctx)) == -FI_EAGAIN &&
		       Clock::now() < until)
			progress();
		ASSERT_EQ(0, ret) << "a cannot send to c while b is flooded";
		bool found = false;
		harness::wait_for(c, a, &rctx, found, 10);
		ASSERT_TRUE(found) << "c did not receive while b is flooded";
		EXPECT_EQ(msg, in);
		round_trips++;
	};

	// Phase 1: flood b, which has no buffers.
	auto stuck_since = Clock::now();
	while (sent < kMessages) {
		out[sent] = message(sent);
		ssize_t ret = fi_send(a.ep, out[sent].data(), out[sent].size(), nullptr, pair->b_at_a,
				      &send_ctx[sent]);
		if (ret == 0) {
			sent++;
			stuck_since = Clock::now();
			if (sent % 50 == 0)
				round_trip_with_c();
			continue;
		}
		ASSERT_EQ(-FI_EAGAIN, ret);
		progress();
		if (Clock::now() - stuck_since > std::chrono::seconds(2))
			break;  // flow control holds the rest back until b posts buffers
	}
	round_trip_with_c();
	printf("flood: %zu of %zu sends accepted before b posted buffers, %zu round trips with c\n",
	       sent, kMessages, round_trips);

	// Phase 2: b posts buffers; the rest of the sends go out; every message must arrive.
	std::vector<std::vector<uint8_t>> in(kMessages, std::vector<uint8_t>(200000));
	std::vector<int> recv_ctx(kMessages);
	size_t posted = 0;
	std::map<size_t, size_t> seen;  // seq -> count
	size_t received = 0, bad = 0;
	auto deadline = Clock::now() + std::chrono::seconds(60);
	while (received < kMessages && Clock::now() < deadline) {
		if (posted < kMessages &&
		    fi_recv(b.ep, in[posted].data(), in[posted].size(), nullptr, FI_ADDR_UNSPEC,
			    &recv_ctx[posted]) == 0)
			posted++;
		if (sent < kMessages) {
			out[sent] = message(sent);
			if (fi_send(a.ep, out[sent].data(), out[sent].size(), nullptr, pair->b_at_a,
				    &send_ctx[sent]) == 0)
				sent++;
		}
		progress();
		while (!b.done.empty()) {
			harness::Completion done = b.done.front();
			b.done.pop_front();
			ASSERT_FALSE(done.error) << "receive failed: " << fi_strerror(done.err);
			size_t slot = static_cast<int *>(done.context) - recv_ctx.data();
			ASSERT_LT(slot, kMessages);
			size_t seq;
			memcpy(&seq, in[slot].data(), sizeof(seq));
			if (seq >= kMessages || memcmp(in[slot].data(), message(seq).data(), size_of(seq)) != 0)
				bad++;
			else
				seen[seq]++;
			received++;
		}
	}
	size_t once = 0;
	for (auto &[seq, count] : seen)
		once += count == 1;
	printf("received %zu, intact and unique %zu, corrupted %zu\n", received, once, bad);
	EXPECT_EQ(kMessages, received) << "messages lost";
	EXPECT_EQ(kMessages, once);
	EXPECT_EQ(0u, bad);
	// Every send completes too.
	size_t send_done = 0;
	deadline = Clock::now() + std::chrono::seconds(20);
	while (send_done < kMessages && Clock::now() < deadline) {
		progress();
		while (!a.done.empty()) {
			harness::Completion done = a.done.front();
			a.done.pop_front();
			EXPECT_FALSE(done.error);
			send_done += done.context >= send_ctx.data() && done.context < send_ctx.data() + kMessages;
		}
	}
	EXPECT_EQ(kMessages, send_done);
	pair.reset();
	fi_freeinfo(info);
}

}  // namespace
