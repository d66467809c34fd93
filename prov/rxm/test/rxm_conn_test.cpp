// Connection management of ofi_rxm over tcp (or RXM_TEST_PROV's core) on loopback, with each endpoint driven by its own
// thread the way two MPI ranks drive theirs: simultaneous first sends, connection timeouts.
// Only the public fi_* API is used.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "src/registry.h"
#include "rxm_test_node.h"
#include "rxm_test_provider.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace {

#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp_conn)() = ofi_tcp_provider_init;
fi_provider *(*volatile link_rxm_conn)() = ofi_rxm_provider_init;
#endif

fi_info *rdm_info()
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->fabric_attr->prov_name = strdup(rxm_test::provider());
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = rxm_test::mr_mode();
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	return ret ? nullptr : info;
}

// An RDM endpoint (rxm_test_node.h): nothing is shared between two Peers, so two threads may
// drive two Peers without locking.
struct Peer : rxm_test::RdmNode {
	explicit Peer(fi_info *info, enum fi_wait_obj wait_obj = FI_WAIT_NONE)
		: RdmNode(info, {.cq_format = FI_CQ_FORMAT_TAGGED, .wait_obj = wait_obj})
	{
	}
};

constexpr int kMessages = 4;

// What one side of an exchange saw.
struct RankResult {
	int sends_ok = 0;
	int recvs_ok = 0;
	int errors = 0;
	bool in_order = true;
	bool timed_out = false;
};

// Posts kMessages receives, waits until the other rank is ready too, optionally sleeps,
// sends kMessages numbered values to 'peer' and reads its CQ until all 2 * kMessages
// operations completed (or 10 s passed).
void run_rank(Peer &me, fi_addr_t peer, uint32_t base, int delay_us, std::atomic<int> &ready,
	      RankResult &res)
{
	uint32_t in[kMessages] = {}, out[kMessages];
	int rctx[kMessages], sctx[kMessages];
	for (int i = 0; i < kMessages; i++)
		if (fi_recv(me.ep, &in[i], sizeof(in[i]), nullptr, FI_ADDR_UNSPEC, &rctx[i]))
			res.errors++;
	ready.fetch_add(1);
	while (ready.load() < 2)
		std::this_thread::yield();
	if (delay_us)
		std::this_thread::sleep_for(std::chrono::microseconds(delay_us));
	for (int i = 0; i < kMessages; i++) {
		out[i] = base + static_cast<uint32_t>(i);
		ssize_t ret;
		while ((ret = fi_send(me.ep, &out[i], sizeof(out[i]), nullptr, peer, &sctx[i])) ==
		       -FI_EAGAIN) {
			fi_cq_tagged_entry e;
			fi_cq_read(me.cq, &e, 0);
		}
		if (ret)
			res.errors++;
	}
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	int next_recv = 0;
	while (res.sends_ok + res.recvs_ok + res.errors < 2 * kMessages) {
		if (std::chrono::steady_clock::now() > deadline) {
			res.timed_out = true;
			return;
		}
		fi_cq_tagged_entry e[8];
		ssize_t n = fi_cq_read(me.cq, e, 8);
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			if (fi_cq_readerr(me.cq, &err, 0) == 1)
				res.errors++;
			continue;
		}
		for (ssize_t i = 0; i < n; i++) {
			if (e[i].flags & FI_RECV) {
				// One peer, receives posted in order: values arrive in send order.
				if (e[i].op_context != &rctx[next_recv] ||
				    in[next_recv] != (base ^ 1u) + static_cast<uint32_t>(next_recv))
					res.in_order = false;
				next_recv++;
				res.recvs_ok++;
			} else {
				res.sends_ok++;
			}
		}
	}
}

class RxmConnect : public ::testing::Test {
protected:
	void SetUp() override
	{
		info = rdm_info();
#ifndef HAVE_TCP
		if (!info && !rxm_test::provider_must_exist())
			GTEST_SKIP() << "built without the tcp provider";
#endif
		ASSERT_NE(nullptr, info) << "no " << rxm_test::provider();
	}
	void TearDown() override { fi_freeinfo(info); }

	fi_info *info = nullptr;
};

// Two endpoints send to each other first, at the same moment, each from its own thread (both
// connection requests cross). Fresh endpoints every iteration give new random identities, so
// either side wins the tie-break, and staggered starts vary the order in which requests,
// rejections and accepts reach each side. Every message must arrive, once, in order, and no
// send may fail.
TEST_F(RxmConnect, SimultaneousFirstSendsFromTwoThreadsAllArrive)
{
	constexpr int kIterations = 80;
	const int delays_us[][2] = {{0, 0}, {0, 50}, {50, 0}, {0, 300}, {300, 0}, {0, 2000}};
	for (int iter = 0; iter < kIterations; iter++) {
		SCOPED_TRACE(iter);
		auto a = std::make_unique<Peer>(info);
		auto b = std::make_unique<Peer>(info);
		fi_addr_t b_at_a = a->insert(b->name);
		fi_addr_t a_at_b = b->insert(a->name);
		const int *delay = delays_us[iter % (sizeof(delays_us) / sizeof(delays_us[0]))];
		std::atomic<int> ready{0};
		RankResult ra, rb;
		// Bases differ in bit 0 so each side knows what the other sends (base ^ 1).
		uint32_t base_a = 1000u * static_cast<uint32_t>(iter) + 100;
		std::thread ta(run_rank, std::ref(*a), b_at_a, base_a, delay[0], std::ref(ready),
			       std::ref(ra));
		std::thread tb(run_rank, std::ref(*b), a_at_b, base_a ^ 1u, delay[1], std::ref(ready),
			       std::ref(rb));
		ta.join();
		tb.join();
		for (const RankResult *r : {&ra, &rb}) {
			EXPECT_FALSE(r->timed_out);
			EXPECT_EQ(0, r->errors);
			EXPECT_EQ(kMessages, r->sends_ok);
			EXPECT_EQ(kMessages, r->recvs_ok);
			EXPECT_TRUE(r->in_order);
		}
		if (HasFailure())
			break;
	}
}

// A listener that completes TCP handshakes (the kernel does) but never accepts, so no CM
// answer ever comes. Its port is ephemeral.
class SilentListener {
public:
	SilentListener()
	{
		fd_ = socket(AF_INET, SOCK_STREAM, 0);
		sockaddr_in sin{};
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		socklen_t len = sizeof(sin);
		if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr *>(&sin), sizeof(sin)) ||
		    listen(fd_, 4) || getsockname(fd_, reinterpret_cast<sockaddr *>(&sin), &len))
			return;
		addr_ = sin;
		ok_ = true;
	}
	~SilentListener()
	{
		if (fd_ >= 0)
			close(fd_);
	}
	bool ok() const { return ok_; }
	const sockaddr_in *addr() const { return &addr_; }

private:
	int fd_ = -1;
	bool ok_ = false;
	sockaddr_in addr_{};
};

// FI_OFI_RXM_CONN_TIMEOUT: a send to a peer that never accepts fails with FI_ETIMEDOUT after
// the timeout, and a thread blocked in fi_cq_sread without a timeout of its own wakes up for
// it (the connection timer is in the CQ's wait set). Run by rxm_conn_timeout.sh with a 2 s
// timeout; skipped otherwise, since the default (30 s) would make make check wait that long.
TEST_F(RxmConnect, SendToAPeerThatNeverAcceptsTimesOut)
{
	const char *env = getenv("FI_OFI_RXM_CONN_TIMEOUT");
	if (!env || atoi(env) < 1 || atoi(env) > 10)
		GTEST_SKIP() << "run with FI_OFI_RXM_CONN_TIMEOUT=1..10 (rxm_conn_timeout.sh)";
	const int timeout_s = atoi(env);
	SilentListener silent;
	ASSERT_TRUE(silent.ok());
	for (enum fi_wait_obj wait : {FI_WAIT_UNSPEC, FI_WAIT_NONE}) {
		SCOPED_TRACE(wait);
		Peer a(info, wait);
		fi_addr_t nowhere = a.insert(silent.addr());
		uint32_t v = 7;
		int sctx[3];
		auto start = std::chrono::steady_clock::now();
		for (int &ctx : sctx)
			ASSERT_EQ(0, fi_send(a.ep, &v, sizeof(v), nullptr, nowhere, &ctx));
		int failed = 0;
		while (failed < 3) {
			fi_cq_tagged_entry e;
			// The sread's own timeout is far beyond the connection's: only the
			// connection timer can wake it in time.
			ssize_t n = wait == FI_WAIT_NONE
					    ? fi_cq_read(a.cq, &e, 1)
					    : fi_cq_sread(a.cq, &e, 1, nullptr, (timeout_s + 4) * 1000);
			double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() -
								      start).count();
			ASSERT_LT(waited, timeout_s + 1.5) << "the sends did not fail in time";
			if (n == -FI_EAGAIN)
				continue;
			ASSERT_EQ(-FI_EAVAIL, n) << "a send to a silent peer completed";
			fi_cq_err_entry err{};
			ASSERT_EQ(1, fi_cq_readerr(a.cq, &err, 0));
			EXPECT_EQ(FI_ETIMEDOUT, err.err);
			EXPECT_EQ(&sctx[failed], err.op_context); // in the order they were sent
			EXPECT_GT(waited, timeout_s - 0.5);
			failed++;
		}
	}
}

} // namespace
