// Issue 15, finding 2: same-host rendezvous pointed at a third process. A local attacker (a
// plain tcp MSG endpoint speaking rxm's wire format) connects to an rxm server and sends a
// rendezvous request flagged same-host that names a bystander's pid, a token the attacker
// knows in the bystander's memory and a segment address there. The bystander is a child
// forked before any socket existed, holding a secret at addresses the attacker knows (fork
// keeps the layout) - as a non-PIE binary's ELF header would be known. The server runs as
// root in CI, so it may read any process: the dangerous case.
//
// Before: the server proved the pid by the token alone and delivered the bystander's secret as
// the message. Now: the pid must own the socket at the far end of the connection, which the
// bystander does not, so no byte of the bystander reaches the message; a legitimate same-host
// client still proves itself and gets the process_vm_readv path, every byte checked.
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_wire.h"
#include "test/adversarial/ident_forged_peer.h"
#include "test/adversarial/sh_bystander.h"
#include "test/badinput/fabric_harness.h"

#include <rdma/fi_errno.h>

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using harness::Side;
using sh::Bystander;
using sh::g_bystander_secret;
using sh::g_bystander_token;
using sh::kSecret;

// rxm logs "peer is process N of this host" when it proves a peer; the test reads stderr.
struct LogToFile {
	LogToFile()
	{
		setenv("FI_LOG_LEVEL", "info", 1);
		setenv("FI_LOG_PROV", "ofi_rxm", 1);
	}
} log_settings; // before the first fi_* call reads them

// Sends stderr to a file while alive; text() reads what was written so far.
class StderrCapture {
public:
	StderrCapture()
	{
		char path[] = "/tmp/sh_bystander_log.XXXXXX";
		int fd = mkstemp(path);
		if (fd < 0)
			return;
		path_ = path;
		fflush(stderr);
		saved_ = dup(2);
		dup2(fd, 2);
		close(fd);
	}
	~StderrCapture()
	{
		fflush(stderr);
		if (saved_ >= 0) {
			dup2(saved_, 2);
			close(saved_);
		}
		if (!path_.empty())
			unlink(path_.c_str());
	}
	std::string text() const
	{
		fflush(stderr);
		std::ifstream in(path_);
		std::stringstream s;
		s << in.rdbuf();
		return s.str();
	}

private:
	std::string path_;
	int saved_ = -1;
};

std::vector<uint8_t> forged_cma_request(uint32_t conn_id, pid_t bystander)
{
	rxm::RndvSegment seg{0x1000, sizeof(g_bystander_secret), 0x5eed5eed};
	rxm::CmaOffer offer;
	offer.pid = static_cast<uint32_t>(bystander);
	offer.token_addr = reinterpret_cast<uintptr_t>(g_bystander_token);
	for (size_t i = 0; i < rxm::kCmaTokenSize; i++)
		offer.token[i] = sh::bystander_token_byte(i);
	offer.addr[0] = reinterpret_cast<uintptr_t>(g_bystander_secret);

	size_t payload = rxm::rndv_payload_size(1) + rxm::kCmaOfferSize;
	std::vector<uint8_t> msg(rxm::kWireHeaderSize + payload);
	rxm::WireHeader h;
	h.op = rxm::WireOp::rndv_request;
	h.flags = rxm::wire_flag::cma;
	h.payload_len = static_cast<uint32_t>(payload);
	h.msg_id = 7;
	h.total_len = sizeof(g_bystander_secret);
	h.conn_id = conn_id;
	rxm::encode_header(h, msg.data());
	rxm::encode_rndv({&seg, 1}, msg.data() + rxm::kWireHeaderSize);
	rxm::encode_cma_offer(offer, msg.data() + rxm::kWireHeaderSize + rxm::rndv_payload_size(1));
	return msg;
}

bool contains(const uint8_t *buf, size_t len, const void *needle, size_t nlen)
{
	for (size_t i = 0; i + nlen <= len; i++)
		if (memcmp(buf + i, needle, nlen) == 0)
			return true;
	return false;
}

TEST(ShBystander, ForgedSameHostOfferNeverDeliversBystanderMemory)
{
	Bystander bystander; // before any socket: it holds none of ours
	ASSERT_TRUE(bystander.ok());
	StderrCapture log;
	fi_info *info = harness::rdm_info(FI_MSG);
	if (!info)
		GTEST_SKIP() << "tcp;ofi_rxm not available on loopback";
	auto server = std::make_unique<Side>(info);
	auto client = std::make_unique<Side>(info);
	ASSERT_TRUE(server->ok && client->ok);
	std::string server_name = ident::name_of(&server->ep->fid);

	// The attack: a receive is posted; the forged request names the bystander.
	std::vector<uint8_t> rx(64, 0xee);
	ASSERT_EQ(fi_recv(server->ep, rx.data(), rx.size(), nullptr, FI_ADDR_UNSPEC, &rx), 0);
	ident::ForgedPeer attacker("127.0.0.1");
	ASSERT_TRUE(attacker.ok());
	rxm::CmData answer;
	sockaddr_in claimed{};
	claimed.sin_family = AF_INET;
	claimed.sin_port = htons(1); // any name of this IP passes the identity check
	inet_pton(AF_INET, "127.0.0.1", &claimed.sin_addr);
	auto pump = [&] {
		server->poll();
		client->poll();
	};
	ASSERT_EQ(attacker.connect(server_name,
				   ident::identity_named(std::string(reinterpret_cast<char *>(&claimed),
								     sizeof(claimed)),
							 0x1234567890abcdefULL),
				   pump, 10, &answer),
		  ident::ForgedPeer::Outcome::accepted);
	ASSERT_TRUE(attacker.send(forged_cma_request(answer.conn_id, bystander.pid()),
				  [&] { pump(); }, 10));
	// The receive may complete (in error: the fallback read names a key nobody granted) or
	// stay posted; either way it must never hold the bystander's bytes.
	bool completed = false, errored = false;
	auto deadline = Clock::now() + std::chrono::seconds(5);
	while (!completed && Clock::now() < deadline) {
		pump();
		attacker.progress();
		for (auto &c : server->done)
			if (c.context == &rx) {
				completed = true;
				errored = c.error;
			}
	}
	EXPECT_FALSE(contains(rx.data(), rx.size(), kSecret, 16))
		<< "the server delivered the bystander's memory as a message (completion "
		<< (completed ? (errored ? "in error" : "successful") : "none") << ")";
	EXPECT_FALSE(completed && !errored) << "the forged rendezvous completed successfully";
	printf("forged same-host offer: receive %s\n",
	       completed ? "completed in error (the fallback read named no granted key)"
			 : "still posted after 5 s (cancelled)");
	if (!completed) {
		fi_cancel(&server->ep->fid, &rx);
		for (int i = 0; i < 100; i++)
			pump();
	}
	server->done.clear();

	// A legitimate same-host client still proves itself: a 200 KiB rendezvous arrives intact
	// by process_vm_readv.
	fi_addr_t server_addr;
	ASSERT_EQ(fi_av_insert(client->av, server_name.data(), 1, &server_addr, 0, nullptr), 1);
	constexpr size_t kBig = 200 * 1024 + 3;
	for (int round = 0; round < 3; round++) {
		std::vector<uint8_t> out(kBig), in(kBig, 0);
		for (size_t i = 0; i < kBig; i++)
			out[i] = static_cast<uint8_t>(i * 31 + round);
		ASSERT_EQ(fi_recv(server->ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &in), 0);
		ssize_t ret;
		auto send_deadline = Clock::now() + std::chrono::seconds(10);
		do {
			ret = fi_send(client->ep, out.data(), out.size(), nullptr, server_addr, &out);
			if (ret == -FI_EAGAIN)
				pump();
		} while (ret == -FI_EAGAIN && Clock::now() < send_deadline);
		ASSERT_EQ(ret, 0);
		bool got = false, sent = false;
		auto until = Clock::now() + std::chrono::seconds(15);
		while ((!got || !sent) && Clock::now() < until) {
			pump();
			attacker.progress();
			for (auto &c : server->done)
				if (c.context == &in) {
					EXPECT_FALSE(c.error) << "round " << round << ": error " << c.err;
					got = true;
				}
			for (auto &c : client->done)
				if (c.context == &out) {
					EXPECT_FALSE(c.error);
					sent = true;
				}
			server->done.clear();
			client->done.clear();
		}
		ASSERT_TRUE(got && sent) << "round " << round << ": legitimate message not through";
		EXPECT_EQ(in, out) << "round " << round << ": legitimate message corrupted";
	}
	std::string text = log.text();
	char proved[64], refused[80];
	snprintf(proved, sizeof(proved), "peer is process %d of this host", getpid());
	snprintf(refused, sizeof(refused), "peer claiming pid %d not proved", bystander.pid());
	EXPECT_NE(text.find(proved), std::string::npos) << "the legitimate client was not proved";
	EXPECT_NE(text.find(refused), std::string::npos) << "the bystander's pid was not refused";
	char bystander_proved[64];
	snprintf(bystander_proved, sizeof(bystander_proved), "peer is process %d of",
		 bystander.pid());
	EXPECT_EQ(text.find(bystander_proved), std::string::npos);
	client.reset();
	server.reset();
	fi_freeinfo(info);
}

} // namespace
