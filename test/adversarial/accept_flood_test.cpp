// Finding 6 of issue 15: sockets that never send a connection request. An attacker process
// opens idle TCP connections to a tcp;ofi_rxm server's listener; the server must close them
// after FI_TCP_CM_REQUEST_TIMEOUT, hold at most FI_TCP_MAX_PENDING_CONN(_PER_IP) of them, keep
// accepting when it runs out of fds (without a log line per failed accept), and a legitimate
// client of the same server must keep getting every message, verified, meanwhile.
//
// main() sets the parameters short: 1.5 s timeout, 16 per source IP, 48 per listener.
#include "config.h"
#include "src/registry.h"
#include "test/adversarial/accept_idle_attacker.h"
#include "test/adversarial/accept_legit_client.h"
#include "test/leaks/process_usage.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

// The registry refers to providers weakly; naming them links them in.
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;

namespace {

using adversarial::ClientOutcome;
using adversarial::IdleAttacker;
using adversarial::RdmPeer;
using process_usage::open_fd_count;

constexpr uint32_t kMessages = 20;     // half 64 B, half 60 KiB
constexpr int kClientSeconds = 15;     // the bound for the whole series under attack
constexpr int kPerSourceBound = 16;    // FI_TCP_MAX_PENDING_CONN_PER_IP below
constexpr int kListenerBound = 48;     // FI_TCP_MAX_PENDING_CONN below
constexpr int kLegitSlack = 3;         // fds of the legitimate connection (socket, rxm's)

std::vector<std::string> sources(int count)
{
	std::vector<std::string> list;
	for (int i = 0; i < count; ++i)
		list.push_back("127.0.0." + std::to_string(2 + i));
	return list;
}

void expect_served(const ClientOutcome &outcome)
{
	EXPECT_TRUE(outcome.client_ok) << "the legitimate client did not get its series through";
	EXPECT_EQ(outcome.received, kMessages);
	EXPECT_EQ(outcome.bad, 0u);
	EXPECT_LT(outcome.seconds, kClientSeconds);
	printf("  legitimate client: %zu/%u messages verified in %.2f s\n", outcome.received,
	       kMessages, outcome.seconds);
}

// Serves until `done` holds or `seconds` pass; true if it held.
template <typename Done> bool serve_until(RdmPeer &server, int seconds, Done done)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
	auto next_check = std::chrono::steady_clock::now();
	while (std::chrono::steady_clock::now() < deadline) {
		server.serve_once();
		if (std::chrono::steady_clock::now() >= next_check) {
			if (done())
				return true;
			next_check += std::chrono::milliseconds(100);
		}
	}
	return done();
}

// The most fds the server held beyond `baseline` while serving for `seconds`.
int peak_fds_while_serving(RdmPeer &server, int baseline, int seconds)
{
	int peak = 0;
	serve_until(server, seconds, [&] {
		peak = std::max(peak, open_fd_count() - baseline);
		return false;
	});
	return peak;
}

TEST(AcceptGuard, IdleHandshakesAreClosedAfterTheTimeout)
{
	RdmPeer server;
	ASSERT_TRUE(server.ok()) << server.error();
	IdleAttacker attacker(server.port(), sources(1), 10, false);
	ASSERT_TRUE(attacker.ok());
	server.serve_once();
	int baseline = open_fd_count();
	ASSERT_TRUE(attacker.start(10));
	expect_served(adversarial::serve_legit_client(server, kMessages, kClientSeconds));
	// Timeout 1.5 s: all ten are closed well within 15 s, while the attacker still holds
	// its ends open.
	bool all_closed = serve_until(server, 15, [&] {
		return attacker.closed_by_server() == 10 && open_fd_count() <= baseline;
	});
	EXPECT_TRUE(all_closed) << "closed by the server: " << attacker.closed_by_server()
				<< " of 10; fds above baseline: " << open_fd_count() - baseline;
}

TEST(AcceptGuard, OneSourceHoldsAtMostItsShareOfHandshakes)
{
	RdmPeer server;
	ASSERT_TRUE(server.ok()) << server.error();
	IdleAttacker attacker(server.port(), sources(1), 100, false);
	ASSERT_TRUE(attacker.ok());
	server.serve_once();
	int baseline = open_fd_count();
	ASSERT_TRUE(attacker.start(10));
	int peak = peak_fds_while_serving(server, baseline, 1);
	EXPECT_LE(peak, kPerSourceBound) << "one source held " << peak << " accepted sockets";
	printf("  100 idle connections from one source: at most %d held\n", peak);
	expect_served(adversarial::serve_legit_client(server, kMessages, kClientSeconds));
}

TEST(AcceptGuard, ManySourcesHoldAtMostTheListenersBound)
{
	RdmPeer server;
	ASSERT_TRUE(server.ok()) << server.error();
	IdleAttacker attacker(server.port(), sources(8), 20, false);
	ASSERT_TRUE(attacker.ok());
	server.serve_once();
	int baseline = open_fd_count();
	ASSERT_TRUE(attacker.start(10));
	int peak = peak_fds_while_serving(server, baseline, 1);
	EXPECT_LE(peak, kListenerBound) << "eight sources held " << peak << " accepted sockets";
	printf("  160 idle connections from 8 sources: at most %d held\n", peak);
	int peak_with_client = 0;
	expect_served(adversarial::serve_legit_client(server, kMessages, kClientSeconds, [&] {
		peak_with_client = std::max(peak_with_client, open_fd_count() - baseline);
	}));
	EXPECT_LE(peak_with_client, kListenerBound + kLegitSlack);
}

// Sends what the process writes to stderr (fi_log) to a file while it lives.
class StderrCapture {
public:
	StderrCapture()
	{
		char path[] = "/tmp/accept_flood_log_XXXXXX";
		int fd = mkstemp(path);
		path_ = path;
		saved_ = dup(2);
		if (fd >= 0 && saved_ >= 0)
			dup2(fd, 2);
		if (fd >= 0)
			close(fd);
	}
	~StderrCapture()
	{
		restore();
		unlink(path_.c_str());
	}
	void restore()
	{
		if (saved_ >= 0) {
			dup2(saved_, 2);
			close(saved_);
			saved_ = -1;
		}
	}
	size_t lines_containing(const std::string &needle) const
	{
		std::ifstream in(path_);
		size_t count = 0;
		for (std::string line; std::getline(in, line);)
			count += line.find(needle) != std::string::npos;
		return count;
	}

private:
	std::string path_;
	int saved_ = -1;
};

class FdLimit {
public:
	explicit FdLimit(rlim_t soft)
	{
		getrlimit(RLIMIT_NOFILE, &saved_);
		rlimit lowered = saved_;
		lowered.rlim_cur = soft;
		setrlimit(RLIMIT_NOFILE, &lowered);
	}
	~FdLimit() { setrlimit(RLIMIT_NOFILE, &saved_); }

private:
	rlimit saved_{};
};

TEST(AcceptGuard, ListenerKeepsServingWhenFdsRunOut)
{
	RdmPeer server;
	ASSERT_TRUE(server.ok()) << server.error();
	// 8 sources x 40 = 320 connections, reopened as soon as the server closes one, against
	// a server that may open 24 more fds: more than it can hold, for as long as it lasts.
	IdleAttacker attacker(server.port(), sources(8), 40, true);
	ASSERT_TRUE(attacker.ok());
	server.serve_once();
	StderrCapture log;
	int baseline = open_fd_count();
	auto attack_start = std::chrono::steady_clock::now();
	{
		FdLimit limit(rlim_t(baseline + 24));
		ASSERT_TRUE(attacker.start(10));
		serve_until(server, 2, [] { return false; });
		expect_served(adversarial::serve_legit_client(server, kMessages, kClientSeconds));
		attacker.leave();
	}
	double attack_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() -
							       attack_start).count();
	// The attacker is gone: its sockets are closed (EOF) or time out within 1.5 s.
	bool back = serve_until(server, 10, [&] { return open_fd_count() <= baseline; });
	EXPECT_TRUE(back) << "fds above baseline after the attack: "
			  << open_fd_count() - baseline;
	log.restore();
	// One warning per 5 s interval at most (plus the first).
	size_t lines = log.lines_containing("accept failed");
	EXPECT_LE(lines, size_t(attack_seconds / 5) + 2) << lines << " accept warnings in "
							 << attack_seconds << " s";
	printf("  %zu accept warnings in %.1f s of attack\n", lines, attack_seconds);
}

} // namespace

int main(int argc, char **argv)
{
	setenv("FI_TCP_CM_REQUEST_TIMEOUT", "1500", 1);
	setenv("FI_TCP_MAX_PENDING_CONN_PER_IP", std::to_string(kPerSourceBound).c_str(), 1);
	setenv("FI_TCP_MAX_PENDING_CONN", std::to_string(kListenerBound).c_str(), 1);
	setenv("FI_LOG_LEVEL", "warn", 1);
	setenv("FI_LOG_PROV", "tcp", 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
