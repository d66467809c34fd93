// Fault tests over tcp;ofi_rxm with a real second process: a peer SIGKILLed while eager,
// segmented (SAR) and rendezvous sends to it are outstanding; a peer address with nothing
// behind it; a listener that never accepts. The survivor must get a completion (error or
// success) for every affected operation within a bounded time, keep talking to another peer,
// and talk again to the peer restarted at the same address.
//
// The same binary is the peer: `peer_failure_test --peer PORT MODE` where MODE is "idle"
// (progresses but posts no receive buffers), "verify" (receives, checks the data pattern and
// prints "ok <len>" per message) or "switch" (verifies until a 1-byte message, then idles).
// Ports come from this helper's range 25000-25999. Mode "sendstop" (with the survivor's port
// as a fourth argument) verifies like "switch" until the 1-byte message, then sends one
// kStoppedSenderSize rendezvous message to the survivor, prints "sent" and stops itself
// (SIGSTOP): a sender that never serves the reads of its rendezvous (stopped_sender.sh).
//
// The *OverShm variants run the same kills after rxm moved the peer to shared memory
// (FI_OFI_RXM_USE_SHM=1, a proved same-host peer): the survivor first exchanges messages
// until a round trip moves no byte over any TCP socket of this process (a kernel counter,
// TCP_INFO), then starts the transfers the kill interrupts. After closing everything, no
// segment may stay mapped, nothing of ours may be under /dev/shm and the process must hold
// as many fds as before. (The plain variants queue their sends before the first connection,
// and everything queued before the switch goes over tcp: they test the core path, whether
// or not the pair moves later; they print whether the peer had a segment mapped.)
#include "test/badinput/fabric_harness.h"
#include "test/tcp_bytes.h"

#include "config.h"
#include "src/registry.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#ifdef HAVE_SHM
// The registry refers to providers weakly: naming shm links it in from the convenience
// library, so rxm can move same-host peers to it as in an application (the *OverShm cases;
// before, this program had no shm provider and no peer ever moved).
fi_provider *(*volatile link_shm)() = ofi_shm_provider_init;
#endif

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

constexpr size_t kStoppedSenderSize = 3 << 20;

// The "sendstop" peer's last act: one rendezvous message to the survivor, then SIGSTOP.
void send_then_stop(harness::Side &side, const char *survivor_port)
{
	sockaddr_in sin{};
	sin.sin_family = AF_INET;
	sin.sin_port = htons(static_cast<uint16_t>(atoi(survivor_port)));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fi_addr_t survivor = FI_ADDR_NOTAVAIL;
	if (fi_av_insert(side.av, &sin, 1, &survivor, 0, nullptr) != 1)
		_exit(4);
	std::vector<uint8_t> out(kStoppedSenderSize);
	for (size_t i = 0; i < out.size(); i++)
		out[i] = pattern_byte(i, out.size());
	int ctx;
	ssize_t ret;
	fi_cq_data_entry e;
	while ((ret = fi_send(side.ep, out.data(), out.size(), nullptr, survivor, &ctx)) ==
	       -FI_EAGAIN)
		fi_cq_read(side.cq, &e, 1);
	if (ret)
		_exit(5);
	// A few passes push out a request that was queued; the survivor does not progress
	// until it saw "sent", so no read of it can be served before the stop.
	for (int i = 0; i < 10; i++)
		fi_cq_read(side.cq, &e, 1);
	printf("sent\n");
	fflush(stdout);
	raise(SIGSTOP);
	for (;;)
		pause(); // until killed
}

int run_peer(const char *port, const std::string &mode, const char *survivor_port)
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
	bool receiving = mode == "verify" || mode == "switch" || mode == "sendstop";
	for (;;) {  // until killed
		if (receiving && !posted) {
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
			if (mode == "switch" && e.len == 1)
				receiving = false;  // from now on messages find no receive
			if (mode == "sendstop" && e.len == 1 && survivor_port)
				send_then_stop(side, survivor_port);
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

using test_tcp::tcp_bytes;

size_t open_fds()
{
	size_t n = 0;
	DIR *dir = opendir("/proc/self/fd");
	if (!dir)
		return 0;
	while (dirent *e = readdir(dir))
		n += e->d_name[0] != '.';
	closedir(dir);
	return n - 1; // the directory's own
}

// Shared-memory segments (shm's memfds) mapped by a process ("self" or a pid).
int segments_mapped(const std::string &pid)
{
	FILE *maps = fopen(("/proc/" + pid + "/maps").c_str(), "r");
	if (!maps)
		return -1;
	char line[512];
	int n = 0;
	while (fgets(line, sizeof(line), maps))
		n += strstr(line, "/memfd:fi_shm") != nullptr;
	fclose(maps);
	return n;
}

// Files under /dev/shm that a process ("self" or a pid) holds open or maps (other jobs on the
// machine may own names there; only what the process reaches counts).
int dev_shm_files(const std::string &pid)
{
	int n = 0;
	std::string fds = "/proc/" + pid + "/fd";
	if (DIR *dir = opendir(fds.c_str())) {
		while (dirent *e = readdir(dir)) {
			char target[512];
			ssize_t len = readlink((fds + "/" + e->d_name).c_str(), target, sizeof(target) - 1);
			n += len > 0 && std::string(target, static_cast<size_t>(len)).rfind("/dev/shm/", 0) == 0;
		}
		closedir(dir);
	}
	if (FILE *maps = fopen(("/proc/" + pid + "/maps").c_str(), "r")) {
		char line[512];
		while (fgets(line, sizeof(line), maps))
			n += strstr(line, " /dev/shm/") != nullptr;
		fclose(maps);
	}
	return n;
}

struct Peer {
	pid_t pid = -1;
	FILE *out = nullptr;

	// use_shm: FI_OFI_RXM_USE_SHM for the peer (nullptr: inherited); extra: a fourth
	// argument (the survivor's port for "sendstop").
	bool start(int port, const char *mode, const char *use_shm = nullptr,
		   const char *extra = nullptr)
	{
		int fds[2];
		if (pipe(fds))
			return false;
		pid = fork();
		if (pid == 0) {
			if (use_shm)
				setenv("FI_OFI_RXM_USE_SHM", use_shm, 1);
			dup2(fds[1], 1);
			close(fds[0]);
			std::string exe = self_exe(), p = std::to_string(port);
			execl(exe.c_str(), exe.c_str(), "--peer", p.c_str(), mode, extra, (char *)nullptr);
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
		fds_before = open_fds();
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

	// Posts 16 sends of `data` to addr, each retried on -FI_EAGAIN for up to `retry` (the
	// first one refused ends the list), then progresses 500 ms so that the connection comes
	// up and traffic starts before the kill. Returns the contexts of the sends posted: the
	// completions name them by address, and the returned vector keeps the storage they were
	// posted with (moved, not copied).
	std::vector<int> post_sends(fi_addr_t addr, const std::vector<uint8_t> &data,
				    std::chrono::seconds retry)
	{
		std::vector<int> ctx(16);
		size_t posted = 0;
		for (int &c : ctx) {
			ssize_t ret;
			auto until = Clock::now() + retry;
			while ((ret = fi_send(pair->a.ep, data.data(), data.size(), nullptr, addr, &c)) ==
				       -FI_EAGAIN &&
			       Clock::now() < until)
				pair->a.poll();
			if (ret)
				break;
			posted++;
		}
		ctx.resize(posted);
		auto until = Clock::now() + std::chrono::milliseconds(500);
		while (Clock::now() < until)
			pair->a.poll();
		return ctx;
	}

	void kill_during(size_t size, int port)
	{
		Peer peer;
		ASSERT_TRUE(peer.start(port, "idle"));
		fi_addr_t addr = insert_peer(pair->a, port);
		std::vector<uint8_t> data(size, 0x42);
		std::vector<int> ctx = post_sends(addr, data, std::chrono::seconds(5));
		size_t posted = ctx.size();
		ASSERT_GT(posted, 0u);
		printf("size %zu: the peer had %d shm segment(s) mapped at the kill\n", size,
		       segments_mapped(std::to_string(peer.pid)));
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

	// Reads one line of the peer's output while progressing both sides (the peer may need
	// us to progress before it can print: connection setup, the switch, rendezvous).
	bool peer_says(Peer &peer, const std::string &expected, int seconds = 10)
	{
		int fd = fileno(peer.out);
		std::string line;
		auto deadline = Clock::now() + std::chrono::seconds(seconds);
		while (Clock::now() < deadline) {
			pair->a.poll();
			pair->b.poll();
			pollfd pfd{fd, POLLIN, 0};
			if (poll(&pfd, 1, 0) <= 0)
				continue;
			char c;
			if (read(fd, &c, 1) != 1)
				return false;
			if (c == '\n') {
				if (line == expected)
					return true;
				ADD_FAILURE() << "peer said '" << line << "', expected '" << expected << "'";
				return false;
			}
			line += c;
		}
		ADD_FAILURE() << "peer did not say '" << expected << "' within " << seconds << " s";
		return false;
	}

	// One message to a receiving ("switch") peer: sent, completed, verified by the peer.
	bool verified_send(Peer &peer, fi_addr_t addr, size_t len)
	{
		std::vector<uint8_t> out(len);
		for (size_t i = 0; i < len; i++)
			out[i] = pattern_byte(i, len);
		int ctx;
		ssize_t ret;
		auto until = Clock::now() + std::chrono::seconds(5);
		while ((ret = fi_send(pair->a.ep, out.data(), len, nullptr, addr, &ctx)) == -FI_EAGAIN &&
		       Clock::now() < until)
			pair->a.poll();
		if (ret)
			return false;
		bool found = false;
		harness::Completion c = harness::wait_for(pair->a, pair->b, &ctx, found, 10);
		return found && !c.error && peer_says(peer, "ok " + std::to_string(len));
	}

	// Talks to the peer until the kernel shows its traffic left tcp: three verified round
	// trips and a settle time that move no byte over any TCP socket of this process (our
	// in-process pair is idle meanwhile). Then the peer stops receiving.
	bool move_to_shm(Peer &peer, fi_addr_t addr)
	{
		auto deadline = Clock::now() + std::chrono::seconds(20);
		while (Clock::now() < deadline) {
			uint64_t before = tcp_bytes();
			for (int i = 0; i < 3; i++)
				if (!verified_send(peer, addr, 64))
					return false;
			// Late ACKs of tcp traffic (delayed ACK) would show up here.
			auto settle = Clock::now() + std::chrono::milliseconds(100);
			while (Clock::now() < settle)
				pair->a.poll();
			if (tcp_bytes() == before)
				return verified_send(peer, addr, 1);
		}
		ADD_FAILURE() << "the peer's traffic never left tcp";
		return false;
	}

	// kill_during over shm: the peer is moved first, then `count` sends of `size` wait on it
	// (a full ring, a rendezvous without a receive) when it is SIGKILLed.
	void kill_during_over_shm(size_t size, int port)
	{
		const char *env = getenv("FI_OFI_RXM_USE_SHM");
		if (env && (strcmp(env, "0") == 0 || strcasecmp(env, "no") == 0 ||
			    strcasecmp(env, "false") == 0))
			GTEST_SKIP() << "FI_OFI_RXM_USE_SHM is off in this process";
		{
			Peer peer;
			ASSERT_TRUE(peer.start(port, "switch", "1"));
			fi_addr_t addr = insert_peer(pair->a, port);
			ASSERT_TRUE(move_to_shm(peer, addr));
			ASSERT_GT(segments_mapped(std::to_string(peer.pid)), 0)
				<< "the peer maps no shm segment, yet its traffic left tcp";
			ASSERT_GT(segments_mapped("self"), 0);
			EXPECT_EQ(0, dev_shm_files(std::to_string(peer.pid)));
			EXPECT_EQ(0, dev_shm_files("self"));
			std::vector<uint8_t> data(size, 0x42);
			std::vector<int> ctx = post_sends(addr, data, std::chrono::seconds(2));
			size_t posted = ctx.size();
			ASSERT_GT(posted, 0u);
			size_t before_kill = 0;
			for (const harness::Completion &c : pair->a.done)
				before_kill += c.context >= &ctx.front() && c.context <= &ctx.back();
			peer.kill_hard();
			auto t0 = Clock::now();
			bool all = false;
			int errors = drain(ctx, all, 20);
			double secs = std::chrono::duration<double>(Clock::now() - t0).count();
			printf("over shm, size %zu: %zu sends, %zu completed before the kill, %d error "
			       "completions, all completed: %d, %.1f s\n",
			       size, posted, before_kill, errors, all, secs);
			EXPECT_TRUE(all) << "sends to a killed peer never completed";
			EXPECT_LT(secs, 10.0);
			if (size > info->tx_attr->inject_size * 4) {
				// They needed the receiver (the ring holds 256 KiB, a rendezvous waits for
				// its receive): some were held when it died, and they must fail.
				EXPECT_LT(before_kill, posted) << "nothing was waiting on the peer";
				EXPECT_GT(errors, 0) << "sends needing a receiver that died cannot all succeed";
			}
			expect_dead_peer_refuses(addr, data);
			expect_other_peer_works();
			Peer again;
			ASSERT_TRUE(again.start(port, "verify", "1"));
			expect_restarted_peer_works(again, addr);
		}
		pair.reset();
		EXPECT_EQ(0, segments_mapped("self")) << "a segment stays mapped after fi_close";
		EXPECT_EQ(fds_before, open_fds()) << "fds left open after fi_close";
		EXPECT_EQ(0, dev_shm_files("self")) << "a file under /dev/shm stays open or mapped";
	}

	fi_info *info = nullptr;
	size_t fds_before = 0;
	std::unique_ptr<harness::RdmPair> pair;
};

TEST_F(PeerFailure, KilledDuringEagerTraffic) { kill_during(1000, 25101); }
TEST_F(PeerFailure, KilledDuringSegmentedTransfers) { kill_during(200000, 25102); }
TEST_F(PeerFailure, KilledMidRendezvous) { kill_during(3 << 20, 25103); }
TEST_F(PeerFailure, KilledDuringEagerTrafficOverShm) { kill_during_over_shm(1000, 25106); }
TEST_F(PeerFailure, KilledDuringSegmentedTransfersOverShm) { kill_during_over_shm(200000, 25107); }
TEST_F(PeerFailure, KilledMidRendezvousOverShm) { kill_during_over_shm(3 << 20, 25108); }

// A same-host sender that stops (SIGSTOP) right after its rendezvous request went out over
// shm. With FI_OFI_RXM_USE_CMA=0 the receiver's reads go over shm's RMA, which the sender
// would have to serve: the receive must complete with FI_ETIMEDOUT within
// FI_OFI_RXM_RNDV_READ_TIMEOUT (stopped_sender.sh sets 2 s) and the other peer keep working.
// With the same-host pull on (the default), the receiver reads the stopped sender's pages
// itself: the message must arrive whole. stopped_sender.sh runs both.
TEST_F(PeerFailure, StoppedSenderMidRendezvousOverShm)
{
	const char *shm = getenv("FI_OFI_RXM_USE_SHM");
	if (shm && strcmp(shm, "0") == 0)
		GTEST_SKIP() << "FI_OFI_RXM_USE_SHM is off in this process";
	const char *cma = getenv("FI_OFI_RXM_USE_CMA");
	bool pull = !(cma && strcmp(cma, "0") == 0);
	sockaddr_in self{};
	size_t len = sizeof(self);
	ASSERT_EQ(0, fi_getname(&pair->a.ep->fid, &self, &len));
	std::string self_port = std::to_string(ntohs(self.sin_port));
	const int port = 25109;
	Peer peer;
	ASSERT_TRUE(peer.start(port, "sendstop", "1", self_port.c_str()));
	fi_addr_t addr = insert_peer(pair->a, port);
	std::vector<uint8_t> in(kStoppedSenderSize, 0x5a);
	int rctx;
	ASSERT_EQ(0, fi_recv(pair->a.ep, in.data(), in.size(), nullptr, FI_ADDR_UNSPEC, &rctx));
	ASSERT_TRUE(move_to_shm(peer, addr));
	// No progress here until the peer has stopped: none of its reads can be served.
	char line[64] = {};
	ASSERT_TRUE(fgets(line, sizeof(line), peer.out));
	ASSERT_STREQ("sent\n", line);
	int status = 0;
	ASSERT_EQ(peer.pid, waitpid(peer.pid, &status, WUNTRACED));
	ASSERT_TRUE(WIFSTOPPED(status));
	auto t0 = Clock::now();
	bool found = false;
	harness::Completion c = harness::wait_for(pair->a, pair->b, &rctx, found, 15);
	double secs = std::chrono::duration<double>(Clock::now() - t0).count();
	printf("stopped sender, pull %s: completed %d, error %d (%s), %.1f s\n", pull ? "on" : "off",
	       found, c.error, fi_strerror(c.err), secs);
	ASSERT_TRUE(found) << "the receive of a stopped sender's rendezvous never completed";
	if (pull) {
		EXPECT_FALSE(c.error);
		bool good = true;
		for (size_t i = 0; i < in.size(); i++)
			good = good && in[i] == pattern_byte(i, in.size());
		EXPECT_TRUE(good) << "the pulled message differs from what the sender sent";
	} else {
		EXPECT_TRUE(c.error);
		EXPECT_EQ(FI_ETIMEDOUT, c.err);
	}
	peer.kill_hard();
	expect_other_peer_works();
}

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
	if ((argc == 4 || argc == 5) && strcmp(argv[1], "--peer") == 0)
		return run_peer(argv[2], argv[3], argc == 5 ? argv[4] : nullptr);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
