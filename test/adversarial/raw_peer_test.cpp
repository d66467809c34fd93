// The raw attacker peer itself: a forged-identity connection it opens is accepted by a
// tcp;ofi_rxm server and an eager message it sends is received intact, so the attacks built on
// it really reach the server's rxm layer.
#include "test/adversarial/raw_peer.h"
#include "test/badinput/fabric_harness.h"

#include <rdma/fi_tagged.h>

#include <gtest/gtest.h>

#include <netinet/in.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

namespace {

TEST(RawPeer, ForgedPeerMessageReachesRxmServer)
{
	fi_info *info = harness::rdm_info(FI_MSG | FI_TAGGED);
	ASSERT_NE(info, nullptr);
	harness::Side server(info);
	ASSERT_TRUE(server.ok);
	sockaddr_in addr{};
	size_t len = sizeof addr;
	ASSERT_EQ(fi_getname(&server.ep->fid, &addr, &len), 0);

	char buf[64] = {};
	ASSERT_EQ(fi_trecv(server.ep, buf, sizeof buf, nullptr, FI_ADDR_UNSPEC, 7, 0, buf), 0);

	std::atomic<int> result{1};
	std::thread attacker([&] {
		adversary::RawPeer peer;
		int ret = peer.connect_to(reinterpret_cast<sockaddr *>(&addr), sizeof addr);
		if (!ret) {
			sockaddr_in claimed = addr;
			claimed.sin_port = htons(1); // nobody listens there: a pure claim
			ret = peer.rxm_handshake(reinterpret_cast<sockaddr *>(&claimed),
						 sizeof claimed, 0x1234, 10000);
		}
		if (!ret) {
			rxm::WireHeader h;
			h.op = rxm::WireOp::eager;
			h.flags = rxm::wire_flag::tagged;
			h.tag = 7;
			h.total_len = 6;
			h.msg_id = 1;
			ret = peer.send_rxm(h, "hello", 6);
		}
		// Keep the socket open until the server has read the message.
		std::this_thread::sleep_for(std::chrono::milliseconds(ret ? 0 : 500));
		result = ret;
	});
	bool found = false;
	harness::Completion c = harness::wait_for(server, server, buf, found, 20);
	attacker.join();
	EXPECT_EQ(result.load(), 0);
	ASSERT_TRUE(found);
	EXPECT_FALSE(c.error);
	EXPECT_STREQ(buf, "hello");
	fi_freeinfo(info);
}

} // namespace
