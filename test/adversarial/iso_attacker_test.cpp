// Public-API attacker against rendezvous memory (issue 15, finding 1). A plain `tcp`
// FI_EP_MSG endpoint connects to a tcp;ofi_rxm server endpoint's listener (fi_getname of the
// rxm endpoint is its core passive endpoint's address) with well-formed rxm CM data, then
// fi_reads and fi_writes keys 1..64 and random keys at offset 0 while the server exchanges
// 1 MiB rendezvous messages with a legitimate tcp;ofi_rxm client. Same-host pulls are off
// (FI_OFI_RXM_USE_CMA=0), so the rendezvous goes through core RMA.
//
// Read-based rendezvous (default): the server's send buffers are registered while the client
// has not posted its receives. Write-based (FI_OFI_RXM_USE_RNDV_WRITE=1, iso_rndv_write.sh):
// the server has matched the client's requests and exposed its receive buffers, and the
// client has not written yet. Every attacker RMA must end in an error completion, the
// server's buffers must be untouched, and the client gets every message, verified, within
// kWaitSeconds.
#include "test/adversarial/iso_harness.h"

#include <rdma/fi_tagged.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using iso::Side;

constexpr size_t kMsgSize = 1 << 20;
constexpr int kMessages = 8;
constexpr uint64_t kRmaCaps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

struct InfoDeleter {
	void operator()(fi_info *i) const { fi_freeinfo(i); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

bool rndv_write_mode()
{
	const char *v = getenv("FI_OFI_RXM_USE_RNDV_WRITE");
	return v && (*v == '1' || *v == 'y' || *v == 'Y');
}

// rxm's connection data as fi_rxm(7)/prov/rxm/README.md describes it: version 1, no
// reject reason, name length, no credits, eager size, no connection id, the name (here an
// IPv4 address the attacker claims as its listener) and a random endpoint id.
sockaddr_in claimed_name(uint16_t port)
{
	sockaddr_in name{};
	name.sin_family = AF_INET;
	name.sin_port = htons(port);
	name.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return name;
}

std::vector<uint8_t> rxm_cm_data(uint16_t port = 26001)
{
	sockaddr_in name = claimed_name(port);
	std::vector<uint8_t> cm(16 + sizeof(name) + 8, 0);
	cm[0] = 1;
	cm[2] = sizeof(name);
	uint32_t eager = 65536;
	memcpy(&cm[8], &eager, 4);  // little-endian host
	memcpy(&cm[16], &name, sizeof(name));
	uint64_t id = 0;
	if (getrandom(&id, sizeof(id), 0) != sizeof(id))
		id = 0x1234567;
	memcpy(&cm[16 + sizeof(name)], &id, 8);
	return cm;
}

struct Attack : ::testing::Test {
	void SetUp() override
	{
		rdm.reset(harness::rdm_info(FI_MSG | FI_TAGGED | kRmaCaps));
		msg.reset(harness::msg_info(FI_MSG | kRmaCaps));
		if (!rdm || !msg)
			GTEST_SKIP() << "tcp / tcp;ofi_rxm unavailable";
		server = std::make_unique<Side>(rdm.get());
		client = std::make_unique<Side>(rdm.get());
		attacker = std::make_unique<Side>(msg.get());
		ASSERT_TRUE(server->ok && client->ok && attacker->ok);
		size_t len = sizeof(name);
		ASSERT_EQ(fi_getname(&client->ep->fid, name, &len), 0);
		ASSERT_EQ(fi_av_insert(server->av, name, 1, &client_at_server, 0, nullptr), 1);
		len = sizeof(name);
		ASSERT_EQ(fi_getname(&server->ep->fid, name, &len), 0);
		ASSERT_EQ(fi_av_insert(client->av, name, 1, &server_at_client, 0, nullptr), 1);
		std::vector<uint8_t> cm = rxm_cm_data();
		attacker->ep = iso::connect_msg(*attacker, name, cm.data(), cm.size(), nullptr,
						{server.get()});
		ASSERT_NE(attacker->ep, nullptr) << "the rxm listener refused a well-formed request";
		for (int i = 0; i < kMessages; i++) {
			send_bufs.emplace_back(kMsgSize);
			recv_bufs.emplace_back(kMsgSize, 0x33);
			iso::fill_pattern(send_bufs[i].data(), kMsgSize, 100 + i);
		}
	}

	void poll(std::initializer_list<Side *> sides, int times = 1)
	{
		for (int i = 0; i < times; i++)
			for (Side *s : sides)
				s->poll();
	}

	// Reads and writes keys 1..64 and 64 random keys at offset 0 from the attacker's
	// connection, with only the server progressing; returns how many succeeded.
	int probe()
	{
		std::vector<uint64_t> keys;
		for (uint64_t k = 1; k <= 64; k++)
			keys.push_back(k);
		for (int i = 0; i < 64; i++) {
			uint64_t k = 0;
			if (getrandom(&k, sizeof(k), 0) == sizeof(k))
				keys.push_back(k);
		}
		std::vector<uint8_t> got(keys.size() * 4096, 0);
		std::vector<uint8_t> marker(4096, 0xab);
		std::vector<int> contexts(keys.size() * 2);
		size_t posted = 0;
		for (size_t i = 0; i < keys.size(); i++) {
			for (int write = 0; write < 2; write++) {
				void *ctx = &contexts[2 * i + write];
				ssize_t ret;
				auto deadline = std::chrono::steady_clock::now() +
						std::chrono::seconds(iso::kWaitSeconds);
				do {
					ret = write ? fi_write(attacker->ep, marker.data(), 4096,
							       nullptr, 0, 0, keys[i], ctx)
						    : fi_read(attacker->ep, &got[i * 4096], 4096,
							      nullptr, 0, 0, keys[i], ctx);
					if (ret == -FI_EAGAIN)
						poll({attacker.get(), server.get()});
				} while (ret == -FI_EAGAIN &&
					 std::chrono::steady_clock::now() < deadline);
				if (ret == 0)
					posted++;
			}
		}
		EXPECT_EQ(posted, contexts.size());
		int succeeded = 0;
		size_t completed = 0;
		auto deadline = std::chrono::steady_clock::now() +
				std::chrono::seconds(iso::kWaitSeconds);
		while (completed < posted && std::chrono::steady_clock::now() < deadline) {
			poll({attacker.get(), server.get()});
			while (!attacker->done.empty()) {
				succeeded += !attacker->done.front().error;
				attacker->done.pop_front();
				completed++;
			}
		}
		EXPECT_EQ(completed, posted) << "attacker RMA without completion";
		EXPECT_EQ(std::count(got.begin(), got.end(), 0), static_cast<long>(got.size()))
			<< "the attacker read bytes";
		return succeeded;
	}

	// Drives everyone until the client and the server have all their completions.
	void finish(Side &sender, Side &receiver)
	{
		size_t sends = 0, recvs = 0;
		auto deadline = std::chrono::steady_clock::now() +
				std::chrono::seconds(iso::kWaitSeconds);
		while ((sends < kMessages || recvs < kMessages) &&
		       std::chrono::steady_clock::now() < deadline) {
			poll({&sender, &receiver, attacker.get()});
			for (; !sender.done.empty(); sender.done.pop_front()) {
				EXPECT_FALSE(sender.done.front().error) << sender.done.front().err;
				sends++;
			}
			for (; !receiver.done.empty(); receiver.done.pop_front()) {
				EXPECT_FALSE(receiver.done.front().error) << receiver.done.front().err;
				recvs++;
			}
			attacker->done.clear();
		}
		EXPECT_EQ(sends, size_t(kMessages)) << "sends missing after " << iso::kWaitSeconds << " s";
		EXPECT_EQ(recvs, size_t(kMessages)) << "receives missing after " << iso::kWaitSeconds << " s";
		for (int i = 0; i < kMessages; i++)
			EXPECT_TRUE(iso::check_pattern(recv_bufs[i].data(), kMsgSize, 100 + i))
				<< "message " << i << " corrupted";
	}

	void post_sends(Side &from, fi_addr_t to)
	{
		for (int i = 0; i < kMessages; i++) {
			ssize_t ret;
			do {
				ret = fi_tsend(from.ep, send_bufs[i].data(), kMsgSize, nullptr, to,
					       i, &send_bufs[i]);
				if (ret == -FI_EAGAIN)
					from.poll();
			} while (ret == -FI_EAGAIN);
			ASSERT_EQ(ret, 0);
		}
	}
	void post_recvs(Side &at, fi_addr_t from)
	{
		for (int i = 0; i < kMessages; i++)
			ASSERT_EQ(fi_trecv(at.ep, recv_bufs[i].data(), kMsgSize, nullptr, from, i, 0,
					   &recv_bufs[i]), 0);
	}

	char name[128]{};  // the server's, as its peers insert it
	InfoPtr rdm, msg;
	std::unique_ptr<Side> server, client, attacker;
	fi_addr_t client_at_server = FI_ADDR_NOTAVAIL, server_at_client = FI_ADDR_NOTAVAIL;
	std::vector<std::vector<uint8_t>> send_bufs, recv_bufs;
};

TEST_F(Attack, BlindRmaReachesNoRendezvousBuffer)
{
	if (!rndv_write_mode()) {
		// The server's 1 MiB sends wait registered for the client's receives.
		post_sends(*server, client_at_server);
		poll({server.get(), client.get()}, 200);
		EXPECT_EQ(probe(), 0) << "attacker RMA succeeded on rendezvous memory";
		for (int i = 0; i < kMessages; i++)
			EXPECT_TRUE(iso::check_pattern(send_bufs[i].data(), kMsgSize, 100 + i));
		post_recvs(*client, server_at_client);
		finish(*server, *client);
	} else {
		// The client's requests arrive unexpected; the server then exposes its receive
		// buffers, and the client does not write until the attacker is done.
		post_sends(*client, server_at_client);
		poll({server.get(), client.get()}, 300);
		post_recvs(*server, client_at_server);
		poll({server.get()}, 100);
		EXPECT_EQ(probe(), 0) << "attacker RMA succeeded on rendezvous memory";
		for (int i = 0; i < kMessages; i++)
			EXPECT_TRUE(std::all_of(recv_bufs[i].begin(), recv_bufs[i].end(),
						[](uint8_t b) { return b == 0x33; }))
				<< "receive buffer " << i << " changed before the client wrote";
		finish(*client, *server);
	}
}

// A peer learns a key the honest way (the server sends it a rendezvous request) and tries
// it over a second connection it opened to the same server: the key is bound to the
// connection it was offered on, so only that one reads it.
TEST_F(Attack, OfferedKeyServesOnlyTheConnectionItWasSentOn)
{
	if (rndv_write_mode())
		GTEST_SKIP() << "the read rendezvous offers the sender's keys";
	fid_ep *offered_on = attacker->ep;
	std::vector<uint8_t> cm = rxm_cm_data(26002);
	fid_ep *other = iso::connect_msg(*attacker, name, cm.data(), cm.size(), nullptr,
					 {server.get()});
	ASSERT_NE(other, nullptr);
	std::vector<uint8_t> request(4096, 0);
	int recv_ctx = 0;
	ASSERT_EQ(fi_recv(offered_on, request.data(), request.size(), nullptr, 0, &recv_ctx), 0);
	// The server sends to the name the attacker's first connection claimed: rxm uses that
	// connection, and the rendezvous request carries the source buffer's key.
	sockaddr_in claimed = claimed_name(26001);
	fi_addr_t attacker_at_server = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(fi_av_insert(server->av, &claimed, 1, &attacker_at_server, 0, nullptr), 1);
	ASSERT_EQ(fi_tsend(server->ep, send_bufs[0].data(), kMsgSize, nullptr, attacker_at_server,
			   7, &send_bufs[0]), 0);
	bool found = false;
	iso::Completion c = iso::wait_completion(*attacker, &recv_ctx, {server.get()}, found);
	ASSERT_TRUE(found && !c.error) << "no rendezvous request reached the attacker";
	// rxm header (56 bytes, op at byte 1: 3 = rendezvous request), then u32 count, u32 0,
	// and {u64 addr, u64 len, u64 key} per segment (fi_rxm(7)).
	ASSERT_EQ(request[1], 3);
	uint64_t addr, seg_len, key;
	memcpy(&addr, &request[56 + 8], 8);
	memcpy(&seg_len, &request[56 + 16], 8);
	memcpy(&key, &request[56 + 24], 8);
	ASSERT_EQ(seg_len, kMsgSize);

	std::vector<uint8_t> got(4096, 0);
	int read_ctx = 0;
	ASSERT_EQ(fi_read(other, got.data(), got.size(), nullptr, 0, addr, key, &read_ctx), 0);
	c = iso::wait_completion(*attacker, &read_ctx, {server.get()}, found);
	ASSERT_TRUE(found);
	EXPECT_TRUE(c.error) << "a key offered to one connection served another";
	EXPECT_TRUE(std::all_of(got.begin(), got.end(), [](uint8_t b) { return b == 0; }));
	// Over the connection it was offered on the same read works: the key was right.
	ASSERT_EQ(fi_read(offered_on, got.data(), got.size(), nullptr, 0, addr, key, &read_ctx), 0);
	c = iso::wait_completion(*attacker, &read_ctx, {server.get()}, found);
	ASSERT_TRUE(found);
	EXPECT_FALSE(c.error);
	EXPECT_TRUE(iso::check_pattern(got.data(), got.size(), 100)) << "wrong bytes";
	fi_close(&other->fid);
}

}  // namespace

int main(int argc, char **argv)
{
	// Rendezvous through core RMA, not same-host pulls (parameters are read at first use).
	setenv("FI_OFI_RXM_USE_CMA", "0", 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
