// A connection cut under traffic over the tcp core (FI_EP_MSG): the survivor must learn about
// it through its EQ (FI_SHUTDOWN) and its CQ (every outstanding send completes, in error when
// its data cannot have gone through), within a bounded time, and later operations must fail
// instead of hanging. Posted receives may be flushed with an error or discarded (fi_cm(3)
// leaves that to the provider; ours discards them, the buffers are the application's again
// once the endpoint is closed), but never completed as if data had arrived.
//  - PeerProcessKilled: the peer is another process, SIGKILLed while the survivor has sends
//    queued behind a full socket and receives posted (the kernel closes its socket).
//  - PeerClosesItsEndpoint: the peer (same process) closes its endpoint mid-stream.
// The same binary is the peer: `connection_cut_test --msg-peer PORT` accepts one connection,
// posts no receive buffers and waits to be killed. Port: 25110 (this helper's range).
#include "test/badinput/fabric_harness.h"

#include <gtest/gtest.h>

#include <rdma/fi_cm.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kPort = 25110;
// 8 MiB in all, about twice what the kernel holds for an unread loopback stream: the
// sender's buffer autotunes up to tcp_wmem's maximum (4 MiB by default) and the receiver's
// takes ~128 KiB more. At 4 MiB the fill was marginal: a sender whose writes pack the
// socket's buffers tightly (the whole backlog in one sendmsg) got every send in.
constexpr size_t kMsg = 128 * 1024;
constexpr int kSends = 64;
constexpr int kRecvs = 4;

fi_info *msg_info_at(const char *node, const char *service, uint64_t flags)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp");
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), node, service, flags, hints, &info);
	fi_freeinfo(hints);
	return ret ? nullptr : info;
}

// ---- the peer process: accept one connection, never receive, wait to be killed ----

int run_msg_peer(const char *port)
{
	fi_info *info = msg_info_at("127.0.0.1", port, FI_SOURCE);
	if (!info)
		return 2;
	harness::Side side(info);
	fid_pep *pep = nullptr;
	if (!side.ok || fi_passive_ep(side.fabric, info, &pep, nullptr) ||
	    fi_pep_bind(pep, &side.eq->fid, 0) || fi_listen(pep))
		return 3;
	printf("ready\n");
	fflush(stdout);
	for (;;) {  // until killed
		uint32_t event;
		fi_eq_cm_entry e{};
		if (fi_eq_read(side.eq, &event, &e, sizeof(e), 0) > 0 && event == FI_CONNREQ) {
			if (fi_endpoint(side.domain, e.info, &side.ep, nullptr) ||
			    fi_ep_bind(side.ep, &side.eq->fid, 0) ||
			    fi_ep_bind(side.ep, &side.cq->fid, FI_TRANSMIT | FI_RECV) ||
			    fi_enable(side.ep) || fi_accept(side.ep, nullptr, 0))
				return 4;
			fi_freeinfo(e.info);
		}
		side.poll();
		usleep(1000);
	}
}

// ---- the survivor ----

std::string self_exe()
{
	char path[4096];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
	path[n > 0 ? n : 0] = 0;
	return path;
}

// Everything the survivor posted, and what became of it.
struct Outstanding {
	std::vector<uint8_t> out = std::vector<uint8_t>(kMsg, 0x5a);
	std::vector<std::vector<uint8_t>> in = std::vector<std::vector<uint8_t>>(kRecvs,
									     std::vector<uint8_t>(kMsg));
	int send_ctx[kSends] = {}, recv_ctx[kRecvs] = {};
	int sends = 0, send_errors = 0, sends_done = 0, recv_errors = 0, recvs_done = 0;
	bool shutdown_seen = false;
	double settle_secs = 0;  // from the cut to FI_SHUTDOWN and every send completed

	void post(fid_ep *ep, harness::Side &side)
	{
		for (int i = 0; i < kRecvs; i++)
			ASSERT_EQ(0, fi_recv(ep, in[i].data(), kMsg, nullptr, 0, &recv_ctx[i]));
		for (int i = 0; i < kSends; i++) {
			ssize_t ret;
			auto until = Clock::now() + std::chrono::seconds(2);
			while ((ret = fi_send(ep, out.data(), kMsg, nullptr, 0, &send_ctx[i])) ==
				       -FI_EAGAIN &&
			       Clock::now() < until)
				side.poll();
			if (ret)
				break;  // the queue is full: enough is outstanding
			sends++;
		}
	}
	void account(harness::Side &side)
	{
		side.poll();
		while (!side.done.empty()) {
			harness::Completion c = side.done.front();
			side.done.pop_front();
			auto *ctx = static_cast<int *>(c.context);
			if (ctx >= send_ctx && ctx < send_ctx + kSends) {
				sends_done++;
				send_errors += c.error;
			} else if (ctx >= recv_ctx && ctx < recv_ctx + kRecvs) {
				recvs_done++;
				recv_errors += c.error;
			}
		}
		uint32_t event;
		fi_eq_cm_entry e{};
		ssize_t n = fi_eq_read(side.eq, &event, &e, sizeof(e), 0);
		if (n > 0 && event == FI_SHUTDOWN)
			shutdown_seen = true;
		if (n == -FI_EAVAIL) {
			fi_eq_err_entry err{};
			fi_eq_readerr(side.eq, &err, 0);
			shutdown_seen = true;  // an EQ error for the endpoint reports the loss too
		}
	}
	// Waits for the shutdown event and a completion for every send, then a little longer
	// for receive flushes, if the provider makes them.
	bool settle(harness::Side &side, int seconds)
	{
		auto t0 = Clock::now(), until = t0 + std::chrono::seconds(seconds);
		while (Clock::now() < until && !(shutdown_seen && sends_done == sends))
			account(side);
		settle_secs = std::chrono::duration<double>(Clock::now() - t0).count();
		auto flushes = Clock::now() + std::chrono::milliseconds(200);
		while (Clock::now() < flushes && recvs_done < kRecvs)
			account(side);
		return shutdown_seen && sends_done == sends;
	}
	// Receives: flushed in error, or not completed at all; never "successful".
	void expect_receives_not_completed_ok()
	{
		EXPECT_EQ(recvs_done, recv_errors) << "a receive completed though the peer sent nothing";
		EXPECT_TRUE(recvs_done == 0 || recvs_done == kRecvs) << "some receives flushed, not all";
	}
	void report(const char *what)
	{
		printf("%s: FI_SHUTDOWN %s; %d/%d sends completed (%d in error), %d/%d receives "
		       "flushed (%d in error) in %.2f s\n",
		       what, shutdown_seen ? "seen" : "MISSING", sends_done, sends, send_errors,
		       recvs_done, kRecvs, recv_errors, settle_secs);
	}
};

// After the loss a new operation fails: at post time or as an error completion.
void expect_new_send_fails(fid_ep *ep, harness::Side &side)
{
	char byte = 0;
	int ctx;
	ssize_t ret = fi_send(ep, &byte, 1, nullptr, 0, &ctx);
	if (ret != 0) {
		EXPECT_LT(ret, 0);
		return;
	}
	bool found = false;
	harness::Completion c = harness::wait_for(side, side, &ctx, found, 10);
	ASSERT_TRUE(found) << "a send on a cut connection never completed";
	EXPECT_TRUE(c.error) << "a send on a cut connection succeeded";
}

TEST(ConnectionCut, PeerProcessKilled)
{
	int fds[2];
	ASSERT_EQ(0, pipe(fds));
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		std::string exe = self_exe(), port = std::to_string(kPort);
		execl(exe.c_str(), exe.c_str(), "--msg-peer", port.c_str(), (char *)nullptr);
		_exit(127);
	}
	close(fds[1]);
	FILE *peer_out = fdopen(fds[0], "r");
	char line[64] = {};
	bool ready = fgets(line, sizeof(line), peer_out) && strncmp(line, "ready", 5) == 0;
	auto kill_peer = [&] {
		if (pid > 0) {
			kill(pid, SIGKILL);
			waitpid(pid, nullptr, 0);
			pid = -1;
		}
	};
	if (!ready) {
		kill_peer();
		fclose(peer_out);
		FAIL() << "the peer process did not start";
	}

	std::string port = std::to_string(kPort);
	fi_info *info = msg_info_at("127.0.0.1", port.c_str(), 0);
	ASSERT_NE(nullptr, info);
	{
		harness::Side a(info);
		ASSERT_TRUE(a.ok);
		ASSERT_EQ(0, fi_endpoint(a.domain, info, &a.ep, nullptr));
		ASSERT_EQ(0, fi_ep_bind(a.ep, &a.eq->fid, 0));
		ASSERT_EQ(0, fi_ep_bind(a.ep, &a.cq->fid, FI_TRANSMIT | FI_RECV));
		ASSERT_EQ(0, fi_enable(a.ep));
		ASSERT_EQ(0, fi_connect(a.ep, info->dest_addr, nullptr, 0));
		bool connected = false;
		auto until = Clock::now() + std::chrono::seconds(10);
		while (!connected && Clock::now() < until) {
			uint32_t event;
			fi_eq_cm_entry e{};
			connected = fi_eq_read(a.eq, &event, &e, sizeof(e), 0) > 0 && event == FI_CONNECTED;
		}
		ASSERT_TRUE(connected);

		Outstanding ops;
		ops.post(a.ep, a);
		ASSERT_GT(ops.sends, 0);
		// Let the socket buffers fill: the peer never receives, so sends stay queued.
		auto fill = Clock::now() + std::chrono::milliseconds(300);
		while (Clock::now() < fill)
			ops.account(a);
		int queued = ops.sends - ops.sends_done;
		kill_peer();
		bool settled = ops.settle(a, 20);
		ops.report("peer killed");
		EXPECT_TRUE(ops.shutdown_seen) << "the cut was not reported through the EQ";
		EXPECT_TRUE(settled) << "operations still outstanding after the cut";
		EXPECT_GT(queued, 0) << "nothing was outstanding when the peer died";
		// Data that did not even fit in the sockets cannot have been sent: those fail.
		EXPECT_GT(ops.send_errors, 0);
		ops.expect_receives_not_completed_ok();
		expect_new_send_fails(a.ep, a);
		// Closing with receives still posted must work (Side's destructor checks nothing).
		EXPECT_EQ(0, fi_close(&a.ep->fid));
		a.ep = nullptr;
	}
	fi_freeinfo(info);
	fclose(peer_out);
}

TEST(ConnectionCut, PeerClosesItsEndpoint)
{
	fi_info *info = harness::msg_info(FI_MSG);
	ASSERT_NE(nullptr, info);
	{
		harness::MsgPair pair(info);
		ASSERT_TRUE(pair.ok);
		Outstanding ops;
		ops.post(pair.a.ep, pair.a);
		ASSERT_GT(ops.sends, 0);
		auto fill = Clock::now() + std::chrono::milliseconds(200);
		while (Clock::now() < fill) {
			ops.account(pair.a);
			pair.b.poll();
		}
		ASSERT_EQ(0, fi_close(&pair.b.ep->fid));
		pair.b.ep = nullptr;
		bool settled = ops.settle(pair.a, 20);
		ops.report("peer endpoint closed");
		EXPECT_TRUE(ops.shutdown_seen) << "the cut was not reported through the EQ";
		EXPECT_TRUE(settled) << "operations still outstanding after the cut";
		ops.expect_receives_not_completed_ok();
		expect_new_send_fails(pair.a.ep, pair.a);
		EXPECT_EQ(0, fi_close(&pair.a.ep->fid));
		pair.a.ep = nullptr;
	}
	fi_freeinfo(info);
}

}  // namespace

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--msg-peer") == 0)
		return run_msg_peer(argv[2]);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
