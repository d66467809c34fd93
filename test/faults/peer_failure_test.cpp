// Fault tests over tcp;ofi_rxm with a real second process: a peer SIGKILLed while eager,
// segmented (SAR) and rendezvous sends to it are outstanding; a peer address with nothing
// behind it; a listener that never accepts. The survivor must get a completion (error or
// success) for every affected operation within a bounded time, keep talking to another peer,
// and talk again to the peer restarted at the same address.
//
// The same binary is the peer: `peer_failure_test --peer PORT MODE` where MODE is "idle"
// (progresses but posts no receive buffers) or "verify" (receives, checks the data pattern and
// prints "ok <len>" per message). Ports come from this helper's range 25000-25999.
#include "test/badinput/fabric_harness.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

uint8_t pattern_byte(size_t i, size_t len) { return static_cast<uint8_t>(i * 13 + len); }

fi_info *rdm_info_at(const char *service)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", service, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	return ret ? nullptr : info;
}

// ---- the peer process ----

int run_peer(const char *port, const std::string &mode)
{
	fi_info *info = rdm_info_at(port);
	if (!info)
		return 2;
	harness::Side side(info);
	if (!side.ok)
		return 3;
	printf("ready\n");
	fflush(stdout);
	const size_t kBuf = 4 << 20;
	std::vector<uint8_t> buf(kBuf);
	int ctx;
	bool posted = false;
	for (;;) {  // until killed
		if (mode == "verify" && !posted) {
			if (fi_recv(side.ep, buf.data(), kBuf, nullptr, FI_ADDR_UNSPEC, &ctx) == 0)
				posted = true;
		}
		fi_cq_data_entry e;
		ssize_t n = fi_cq_read(side.cq, &e, 1);
		if (n == 1 && (e.flags & FI_RECV)) {
			bool good = true;
			for (size_t i = 0; i < e.len; i++)
				good = good && buf[i] == pattern_byte(i, e.len);
			printf("%s %zu\n", good ? "ok" : "bad", e.len);
			fflush(stdout);
			posted = false;
		} else if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			fi_cq_readerr(side.cq, &err, 0);
		}
	}
}

// ---- the survivor side ----

std::string self_exe()
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	return path;
}

struct Peer {
	pid_t pid = -1;
	FILE *out = nullptr;

	bool start(int port, const char *mode)
	{
		int fds[2];
		if (pipe(fds))
			return false;
		pid = fork();
		if (pid == 0) {
			dup2(fds[1], 1);
			close(fds[0]);
			std::string exe = self_exe(), p = std::to_string(port);
			execl(exe.c_str(), exe.c_str(), "--peer", p.c_str(), mode, (char *)nullptr);
			_exit(127);
		}
		close(fds[1]);
		out = fdopen(fds[0], "r");
		char line[64];
		return fgets(line, sizeof(line), out) && strncmp(line, "ready", 5) == 0;
	}
	void kill_hard()
	{
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
		}
		pid = -1;
		if (out)
			fclose(out);
		out = nullptr;
	}
	~Peer() { kill_hard(); }
};

fi_addr_t insert_peer(harness::Side &side, int port)
{
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(static_cast<uint16_t>(port));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fi_addr_t addr = FI_ADDR_NOTAVAIL;
	EXPECT_EQ(1, fi_av_insert(side.av, &sin, 1, &addr, 0, nullptr));
	return addr;
}

class PeerFailure : public ::testing::Test {
protected:
	void SetUp() override
	{
		info = harness::rdm_info(FI_MSG);
		ASSERT_NE(nullptr, info);
		pair = std::make_unique<harness::RdmPair>(info);
		ASSERT_TRUE(pair->ok);
	}
	void TearDown() override
	{
		pair.reset();
		fi_freeinfo(info);
	}

	// Polls until every context in [first, first+count) has completed or the deadline passes.
	// Returns the number of error completions; 'all' tells whether everything completed.
	int drain(std::vector<int> &ctx, bool &all, int seconds)
	{
		int errors = 0;
		size_t completed = 0;
		auto deadline = Clock::now() + std::chrono::seconds(seconds);
		harness::Side &a = pair->a;
		while (completed < ctx.size() && Clock::now() < deadline) {
			a.poll();
			pair->b.poll();
			while (!a.done.empty()) {
				harness::Completion c = a.done.front();
				a.done.pop_front();
				if (c.context >= &ctx.front() && c.context <= &ctx.back()) {
					completed++;
					errors += c.error;
				}
			}
		}
		all = completed == ctx.size();
		return errors;
	}

	// Sends one verified message to the in-process peer b: the survivor still works.
	void expect_other_peer_works()
	{
		std::vector<uint8_t> out(100000), in(100000);
		for (size_t i = 0; i < out.size(); i++)
			out[i] = pattern_byte(i, out.size());
		int rctx, sctx;
		ASSERT_EQ(0, fi_recv(pair->b.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx));
		ASSERT_EQ(0, fi_send(pair->a.ep, out.data(), out.size(), nullptr, pair->b_at_a, &sctx));
		bool found = false;
		harness::Completion c = harness::wait_for(pair->b, pair->a, &rctx, found, 15);
		ASSERT_TRUE(found) << "the other peer no longer receives";
		EXPECT_FALSE(c.error);
		EXPECT_EQ(out, in);
		c = harness::wait_for(pair->a, pair->b, &sctx, found, 15);
		ASSERT_TRUE(found);
	}

	// Sends to a restarted "verify" peer and reads its verdict.
	void expect_restarted_peer_works(Peer &peer, fi_addr_t addr)
	{
		std::vector<uint8_t> out(300000);
		for (size_t i = 0; i < out.size(); i++)
			out[i] = pattern_byte(i, out.size());
		// The first send may still hit the old, dead connection; retry a few times.
		for (int attempt = 0; attempt < 5; attempt++) {
			int sctx;
			ssize_t ret = fi_send(pair->a.ep, out.data(), out.size(), nullptr, addr, &sctx);
			if (ret == -FI_EAGAIN) {
				pair->a.poll();
				continue;
			}
			ASSERT_EQ(0, ret);
			bool found = false;
			harness::Completion c = harness::wait_for(pair->a, pair->b, &sctx, found, 15);
			ASSERT_TRUE(found) << "send to the restarted peer never completed";
			if (!c.error) {
				char line[64] = {};
				ASSERT_TRUE(fgets(line, sizeof(line), peer.out));
				EXPECT_STREQ("ok 300000\n", line);
				return;
			}
		}
		ADD_FAILURE() << "the restarted peer could not be reached";
	}

	// A new send to the killed peer gets an error (at post time or as a completion) in time.
	void expect_dead_peer_refuses(fi_addr_t addr, std::vector<uint8_t> &data)
	{
		int ctx;
		ssize_t ret = fi_send(pair->a.ep, data.data(), data.size(), nullptr, addr, &ctx);
		if (ret < 0 && ret != -FI_EAGAIN)
			return;
		ASSERT_EQ(0, ret);
		bool found = false;
		harness::Completion c = harness::wait_for(pair->a, pair->b, &ctx, found, 20);
		ASSERT_TRUE(found) << "a send to a dead peer never completed";
		EXPECT_TRUE(c.error) << "a send to a dead peer succeeded";
	}

	void kill_during(size_t size, int port)
	{
		Peer peer;
		ASSERT_TRUE(peer.start(port, "idle"));
		fi_addr_t addr = insert_peer(pair->a, port);
		std::vector<uint8_t> data(size, 0x42);
		std::vector<int> ctx(16);
		size_t posted = 0;
		for (int &c : ctx) {
			ssize_t ret;
			auto until = Clock::now() + std::chrono::seconds(5);
			while ((ret = fi_send(pair->a.ep, data.data(), size, nullptr, addr, &c)) == -FI_EAGAIN &&
			       Clock::now() < until)
				pair->a.poll();
			if (ret)
				break;
			posted++;
		}
		ctx.resize(posted);
		ASSERT_GT(posted, 0u);
		// Let the connection come up and traffic start, then kill the receiver.
		auto until = Clock::now() + std::chrono::milliseconds(500);
		while (Clock::now() < until)
			pair->a.poll();
		peer.kill_hard();
		auto t0 = Clock::now();
		bool all = false;
		int errors = drain(ctx, all, 20);
		double secs = std::chrono::duration<double>(Clock::now() - t0).count();
		printf("size %zu: %zu sends, %d error completions, all completed: %d, %.1f s\n", size,
		       posted, errors, all, secs);
		EXPECT_TRUE(all) << "sends to a killed peer never completed";
		// Eager sends may all complete before the kill: the receiver's provider buffers
		// unexpected messages. Larger ones need the receiver and must fail.
		if (size > info->tx_attr->inject_size * 4) {
			EXPECT_GT(errors, 0) << "sends needing a receiver that died cannot all succeed";
		}
		expect_dead_peer_refuses(addr, data);
		expect_other_peer_works();
		Peer again;
		ASSERT_TRUE(again.start(port, "verify"));
		expect_restarted_peer_works(again, addr);
	}

	fi_info *info = nullptr;
	std::unique_ptr<harness::RdmPair> pair;
};

TEST_F(PeerFailure, KilledDuringEagerTraffic) { kill_during(1000, 25101); }
TEST_F(PeerFailure, KilledDuringSegmentedTransfers) { kill_during(200000, 25102); }
TEST_F(PeerFailure, KilledMidRendezvous) { kill_during(3 << 20, 25103); }

TEST_F(PeerFailure, NothingBehindThePort)
{
	fi_addr_t addr = insert_peer(pair->a, 25104);
	char buf[64] = {};
	int ctx;
	ASSERT_EQ(0, fi_send(pair->a.ep, buf, sizeof(buf), nullptr, addr, &ctx));
	bool found = false;
	harness::Completion c = harness::wait_for(pair->a, pair->b, &ctx, found, 20);
	ASSERT_TRUE(found) << "send to a closed port never completed";
	EXPECT_TRUE(c.error);
	expect_other_peer_works();
}

TEST_F(PeerFailure, ListenerThatNeverAccepts)
{
	// A plain socket that listens but never accepts: TCP connects, no CM answer ever comes.
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	ASSERT_GE(fd, 0);
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(25105);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ASSERT_EQ(0, bind(fd, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)));
	ASSERT_EQ(0, listen(fd, 4));
	fi_addr_t addr = insert_peer(pair->a, 25105);
	char buf[64] = {};
	int ctx;
	ASSERT_EQ(0, fi_send(pair->a.ep, buf, sizeof(buf), nullptr, addr, &ctx));
	// The other peer must not be blocked while that connection hangs.
	expect_other_peer_works();
	bool found = false;
	harness::Completion c = harness::wait_for(pair->a, pair->b, &ctx, found, 20);
	close(fd);
	ASSERT_TRUE(found) << "send to a listener that never accepts never completed";
	EXPECT_TRUE(c.error);
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "--peer") == 0)
		return run_peer(argv[2], argv[3]);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
