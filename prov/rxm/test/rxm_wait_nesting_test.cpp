// How deep the FI_GETWAIT fds of FI_WAIT_FD objects sit in epoll nesting (issue 17 item 4).
//
// Applications put the fd into epoll sets of their own, and those sets into others (Mercury
// and its tools use two levels). Linux refuses an epoll_ctl that would make any file more than
// 5 epoll levels deep (ELOOP for the set, EINVAL when a socket is added under too deep a
// chain), so a provider's fd must leave 3 levels to the application. Each test nests the fd in
// 3 sets of its own before any connection exists (sockets the provider adds later must still
// be accepted under the nest), then shows that an arriving message wakes the outermost set
// and that the read which follows returns it. Runs over tcp (MSG endpoints) and tcp;ofi_rxm.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "prov/util/test/epoll_levels.h"
#include "prov/tcp/test/tcp_test_pair.h"
#include "rxm_test_provider.h"
#include "src/registry.h"

#include <gtest/gtest.h>

#include <sys/epoll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <thread>

namespace {

fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;

using Clock = std::chrono::steady_clock;
constexpr int kTimeoutMs = 10000;

// Epoll sets of the application's (3 unless said otherwise): level 0 holds the provider's
// fd, each next level holds the one before. The outermost is what the application sleeps on.
class EpollNest {
public:
	static constexpr int kMaxLevels = 3;
	explicit EpollNest(int levels = kMaxLevels) : count_(levels) {}
	~EpollNest()
	{
		for (int fd : levels_)
			if (fd >= 0)
				::close(fd);
	}
	// 0, or the errno of the first epoll_ctl or epoll_create1 that failed.
	int nest(int fd)
	{
		int inner = fd;
		for (int i = 0; i < count_; ++i) {
			int &level = levels_[i];
			level = epoll_create1(EPOLL_CLOEXEC);
			if (level < 0)
				return errno;
			epoll_event ev{};
			ev.events = EPOLLIN;
			ev.data.fd = inner;
			if (epoll_ctl(level, EPOLL_CTL_ADD, inner, &ev))
				return errno;
			inner = level;
		}
		return 0;
	}
	// True when the outermost set reports the fd readable within timeout_ms.
	bool wakes_within(int timeout_ms)
	{
		epoll_event ev;
		int n;
		do {
			n = epoll_wait(levels_[count_ - 1], &ev, 1, timeout_ms);
		} while (n < 0 && errno == EINTR);
		return n > 0;
	}

private:
	int count_;
	int levels_[kMaxLevels] = {-1, -1, -1};
};

// An application's event loop over one object: read; when nothing is there, fi_trywait and
// sleep on the nest. Every sleep must end by a wake-up, not by its timeout: a wake-up that
// never comes is the failure this looks for. Returns what 'read' returned first other than
// -FI_EAGAIN, or -FI_ETIMEDOUT when a sleep timed out or the deadline passed.
ssize_t read_by_nest(fid_fabric *fabric, fid *object, EpollNest &nest,
		     const std::function<ssize_t()> &read, int *sleeps = nullptr)
{
	auto deadline = Clock::now() + std::chrono::milliseconds(kTimeoutMs);
	while (Clock::now() < deadline) {
		ssize_t n = read();
		if (n != -FI_EAGAIN)
			return n;
		fid *fids[] = {object};
		int rc = fi_trywait(fabric, fids, 1);
		if (rc == -FI_EAGAIN)
			continue;
		EXPECT_EQ(0, rc) << fi_strerror(-rc);
		if (rc)
			return rc;
		if (!nest.wakes_within(kTimeoutMs))
			return -FI_ETIMEDOUT;
		if (sleeps)
			++*sleeps;
	}
	return -FI_ETIMEDOUT;
}

// ---- tcp;ofi_rxm ----

class RxmNode {
public:
	RxmNode(fi_info *info, fi_wait_obj wait_obj, bool with_cntr)
	{
		EXPECT_EQ(0, fi_fabric(info->fabric_attr, &fabric, nullptr));
		EXPECT_EQ(0, fi_domain(fabric, info, &domain, nullptr));
		if (wait_obj == FI_WAIT_SET) {
			fi_wait_attr wait_attr{};
			wait_attr.wait_obj = FI_WAIT_FD;
			EXPECT_EQ(0, fi_wait_open(fabric, &wait_attr, &wait_set));
		}
		fi_av_attr av_attr{};
		av_attr.type = FI_AV_TABLE;
		EXPECT_EQ(0, fi_av_open(domain, &av_attr, &av, nullptr));
		fi_cq_attr cq_attr{};
		cq_attr.format = FI_CQ_FORMAT_DATA;
		cq_attr.wait_obj = wait_obj;
		cq_attr.wait_set = wait_set;
		EXPECT_EQ(0, fi_cq_open(domain, &cq_attr, &cq, nullptr));
		EXPECT_EQ(0, fi_endpoint(domain, info, &ep, nullptr));
		EXPECT_EQ(0, fi_ep_bind(ep, &av->fid, 0));
		EXPECT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
		if (with_cntr) {
			fi_cntr_attr cntr_attr{};
			cntr_attr.events = FI_CNTR_EVENTS_COMP;
			cntr_attr.wait_obj = wait_obj;
			EXPECT_EQ(0, fi_cntr_open(domain, &cntr_attr, &cntr, this));
			EXPECT_EQ(0, fi_ep_bind(ep, &cntr->fid, FI_RECV));
		}
		EXPECT_EQ(0, fi_enable(ep));
		EXPECT_EQ(0, fi_getname(&ep->fid, name, &name_len));
	}
	~RxmNode()
	{
		EXPECT_EQ(0, fi_close(&ep->fid));
		if (cntr) {
			EXPECT_EQ(0, fi_close(&cntr->fid));
		}
		EXPECT_EQ(0, fi_close(&cq->fid));
		EXPECT_EQ(0, fi_close(&av->fid));
		if (wait_set) {
			EXPECT_EQ(0, fi_close(&wait_set->fid));
		}
		EXPECT_EQ(0, fi_close(&domain->fid));
		EXPECT_EQ(0, fi_close(&fabric->fid));
	}
	fi_addr_t insert(const RxmNode &peer)
	{
		fi_addr_t addr = FI_ADDR_NOTAVAIL;
		EXPECT_EQ(1, fi_av_insert(av, peer.name, 1, &addr, 0, nullptr));
		return addr;
	}

	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_wait *wait_set = nullptr;  // FI_WAIT_SET nodes: their CQ is in it
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_cntr *cntr = nullptr;
	fid_ep *ep = nullptr;
	uint8_t name[64];
	size_t name_len = sizeof(name);
};

class RxmNesting : public ::testing::Test {
protected:
	void SetUp() override
	{
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG;
		hints->fabric_attr->prov_name = strdup(rxm_test::provider());
		hints->addr_format = FI_SOCKADDR_IN;
		hints->domain_attr->mr_mode = rxm_test::mr_mode();
		int ret = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE,
				     hints, &info);
		fi_freeinfo(hints);
		ASSERT_EQ(0, ret) << rxm_test::provider() << ": " << fi_strerror(-ret);
		receiver = std::make_unique<RxmNode>(info, FI_WAIT_FD, true);
		sender = std::make_unique<RxmNode>(info, FI_WAIT_NONE, false);
		receiver_at_sender = sender->insert(*receiver);
		receiver->insert(*sender);
	}
	void TearDown() override
	{
		receiver.reset();
		sender.reset();
		fi_freeinfo(info);
	}

	// Sends one message from another thread, which drives the sender's progress (its own
	// CQ) until the send completes: the test thread only sleeps on the receiver's fd.
	std::thread send_one(const char *text)
	{
		return std::thread([this, text] {
			auto deadline = Clock::now() + std::chrono::milliseconds(kTimeoutMs);
			fi_cq_data_entry e;
			ssize_t rc, n = -FI_EAGAIN;
			// -FI_EAGAIN while the connection is being made: progress and retry.
			while ((rc = fi_send(sender->ep, text, strlen(text) + 1, nullptr,
					     receiver_at_sender, nullptr)) == -FI_EAGAIN &&
			       Clock::now() < deadline)
				n = fi_cq_read(sender->cq, &e, 1);
			EXPECT_EQ(-FI_EAGAIN, n) << "a completion before the send";
			EXPECT_EQ(0, rc) << fi_strerror(static_cast<int>(-rc));
			while (n == -FI_EAGAIN && Clock::now() < deadline)
				n = fi_cq_read(sender->cq, &e, 1);
			EXPECT_EQ(1, n) << "the send did not complete";
		});
	}

	fi_info *info = nullptr;
	std::unique_ptr<RxmNode> receiver, sender;
	fi_addr_t receiver_at_sender = FI_ADDR_NOTAVAIL;
};

TEST_F(RxmNesting, CqFdLeavesThreeLevelsAndWakesTheOutermost)
{
	int fd = -1;
	ASSERT_EQ(0, fi_control(&receiver->cq->fid, FI_GETWAIT, &fd));
	printf("levels left to the application: %d\n", levels_accepted(fd));
	EpollNest nest;
	int err = nest.nest(fd);
	ASSERT_EQ(0, err) << strerror(err);
	char in[16] = {};
	ASSERT_EQ(0, fi_recv(receiver->ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, in));
	std::thread sending = send_one("nested");
	fi_cq_data_entry e{};
	int sleeps = 0;
	ssize_t n = read_by_nest(receiver->fabric, &receiver->cq->fid, nest,
				 [&] { return fi_cq_read(receiver->cq, &e, 1); }, &sleeps);
	sending.join();
	ASSERT_EQ(1, n) << fi_strerror(static_cast<int>(-n));
	EXPECT_EQ(in, e.op_context);
	EXPECT_STREQ("nested", in);
	EXPECT_GE(sleeps, 1) << "the test never slept on the nest";
}

TEST_F(RxmNesting, CntrFdLeavesThreeLevelsAndWakesTheOutermost)
{
	int fd = -1;
	ASSERT_EQ(0, fi_control(&receiver->cntr->fid, FI_GETWAIT, &fd));
	printf("levels left to the application: %d\n", levels_accepted(fd));
	EpollNest nest;
	int err = nest.nest(fd);
	ASSERT_EQ(0, err) << strerror(err);
	char in[16] = {};
	ASSERT_EQ(0, fi_recv(receiver->ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, in));
	std::thread sending = send_one("counted");
	ssize_t n = read_by_nest(receiver->fabric, &receiver->cntr->fid, nest, [&]() -> ssize_t {
		return fi_cntr_read(receiver->cntr) ? 1 : -FI_EAGAIN;
	});
	sending.join();
	ASSERT_EQ(1, n) << fi_strerror(static_cast<int>(-n));
	EXPECT_STREQ("counted", in);
}

// fi_poll over an rxm counter (issue 17 item 9 left counters open): each pass progresses the
// endpoints bound to it, and a change is reported once, with the counter's context.
TEST_F(RxmNesting, PollSetOverACounterReportsItsChangeOnce)
{
	fid_poll *pollset = nullptr;
	fi_poll_attr attr{};
	ASSERT_EQ(0, fi_poll_open(receiver->domain, &attr, &pollset));
	ASSERT_EQ(0, fi_poll_add(pollset, &receiver->cntr->fid, 0));
	void *contexts[4] = {};
	EXPECT_EQ(0, fi_poll(pollset, contexts, 4));  // nothing yet
	char in[16] = {};
	ASSERT_EQ(0, fi_recv(receiver->ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, in));
	std::thread sending = send_one("polled");
	auto deadline = Clock::now() + std::chrono::milliseconds(kTimeoutMs);
	int n = 0;
	while (n == 0 && Clock::now() < deadline)
		n = fi_poll(pollset, contexts, 4);
	sending.join();
	ASSERT_EQ(1, n);
	EXPECT_EQ(receiver.get(), contexts[0]);
	EXPECT_EQ(1u, fi_cntr_read(receiver->cntr));
	EXPECT_STREQ("polled", in);
	EXPECT_EQ(0, fi_poll(pollset, contexts, 4));  // reported: not again until it changes
	fi_cq_data_entry e;
	EXPECT_EQ(1, fi_cq_read(receiver->cq, &e, 1));  // the receive's completion
	EXPECT_EQ(0, fi_poll_del(pollset, &receiver->cntr->fid, 0));
	EXPECT_EQ(0, fi_close(&pollset->fid));
}

// fi_wait on a wait set holding an rxm CQ asks rxm's cores too (fi_trywait on them, through
// the member's layered_trywait): a send completion that the core wrote during fi_send, with
// no socket event to follow, ends the wait at once instead of at the timeout.
TEST_F(RxmNesting, WaitSetOverACqSeesACompletionTheCoreHolds)
{
	RxmNode waiter(info, FI_WAIT_SET, false);
	fi_addr_t receiver_at_waiter = waiter.insert(*receiver);
	receiver->insert(waiter);
	char in[16] = {};
	fi_cq_data_entry e{};
	auto deadline = Clock::now() + std::chrono::milliseconds(kTimeoutMs);
	// The first message makes the connection (both sides progressed by their reads).
	for (const char *text : {"connect", "inline"}) {
		ASSERT_EQ(0, fi_recv(receiver->ep, in, sizeof(in), nullptr, FI_ADDR_UNSPEC, in));
		ssize_t rc;
		while ((rc = fi_send(waiter.ep, text, strlen(text) + 1, nullptr, receiver_at_waiter,
				     nullptr)) == -FI_EAGAIN &&
		       Clock::now() < deadline)
			fi_cq_read(receiver->cq, &e, 0);
		ASSERT_EQ(0, rc);
		if (!strcmp(text, "inline")) {
			// Only the wait set is asked: it must report the send's completion now.
			auto start = Clock::now();
			EXPECT_EQ(0, fi_wait(waiter.wait_set, kTimeoutMs));
			EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(kTimeoutMs / 2));
		}
		ssize_t sent = -FI_EAGAIN, got = -FI_EAGAIN;
		while ((sent == -FI_EAGAIN || got == -FI_EAGAIN) && Clock::now() < deadline) {
			if (sent == -FI_EAGAIN)
				sent = fi_cq_read(waiter.cq, &e, 1);
			if (got == -FI_EAGAIN)
				got = fi_cq_read(receiver->cq, &e, 1);
		}
		ASSERT_EQ(1, sent);
		ASSERT_EQ(1, got);
		EXPECT_STREQ(text, in);
	}
}

// EQs leave 3 levels like CQs (they watch each domain engine directly, not through the
// fabric engine that nests them; see prov/util/README.md), the rxm EQ's too.
TEST_F(RxmNesting, EqFdLeavesThreeLevelsAndWakesTheOutermost)
{
	fi_eq_attr attr{};
	attr.wait_obj = FI_WAIT_FD;
	fid_eq *eq = nullptr;
	ASSERT_EQ(0, fi_eq_open(receiver->fabric, &attr, &eq, nullptr));
	int fd = -1;
	ASSERT_EQ(0, fi_control(&eq->fid, FI_GETWAIT, &fd));
	printf("levels left to the application: %d\n", levels_accepted(fd));
	EpollNest nest;
	int err = nest.nest(fd);
	ASSERT_EQ(0, err) << strerror(err);
	fi_eq_entry written{};
	written.context = &written;
	std::thread writer([&] {
		std::this_thread::sleep_for(std::chrono::milliseconds(50));
		EXPECT_EQ(static_cast<ssize_t>(sizeof(written)),
			  fi_eq_write(eq, FI_NOTIFY, &written, sizeof(written), 0));
	});
	uint32_t event = 0;
	fi_eq_entry got{};
	ssize_t n = read_by_nest(receiver->fabric, &eq->fid, nest,
				 [&] { return fi_eq_read(eq, &event, &got, sizeof(got), 0); });
	writer.join();
	EXPECT_EQ(static_cast<ssize_t>(sizeof(got)), n);
	EXPECT_EQ(FI_NOTIFY, event);
	EXPECT_EQ(&written, got.context);
	EXPECT_EQ(0, fi_close(&eq->fid));
}

// ---- tcp (MSG endpoints) ----

TEST(TcpNesting, CqAndCntrFdsLeaveThreeLevelsAndWakeTheOutermost)
{
	tcp_test::TcpPair pair;
	fid_cntr *cntr = nullptr;
	pair.before_server_enable = [&](fid_ep *ep) {
		EXPECT_EQ(0, fi_ep_bind(ep, &cntr->fid, FI_RECV));
	};
	ASSERT_TRUE(pair.open(FI_WAIT_FD));
	fi_cntr_attr cntr_attr{};
	cntr_attr.events = FI_CNTR_EVENTS_COMP;
	cntr_attr.wait_obj = FI_WAIT_FD;
	ASSERT_EQ(0, fi_cntr_open(pair.domain, &cntr_attr, &cntr, nullptr));
	int cq_fd = -1, cntr_fd = -1, eq_fd = -1;
	ASSERT_EQ(0, fi_control(&pair.server_cq->fid, FI_GETWAIT, &cq_fd));
	ASSERT_EQ(0, fi_control(&cntr->fid, FI_GETWAIT, &cntr_fd));
	ASSERT_EQ(0, fi_control(&pair.server_eq->fid, FI_GETWAIT, &eq_fd));
	printf("levels left to the application: cq %d, cntr %d, eq %d\n",
	       levels_accepted(cq_fd), levels_accepted(cntr_fd), levels_accepted(eq_fd));
	// Nested before the connection exists: its sockets join the provider's sets later.
	EpollNest cq_nest, cntr_nest, eq_nest;
	int err = cq_nest.nest(cq_fd);
	ASSERT_EQ(0, err) << strerror(err);
	err = cntr_nest.nest(cntr_fd);
	ASSERT_EQ(0, err) << strerror(err);
	err = eq_nest.nest(eq_fd);
	ASSERT_EQ(0, err) << strerror(err);
	ASSERT_TRUE(pair.connect());
	char in[16] = {};
	ASSERT_EQ(0, fi_recv(pair.server, in, sizeof(in), nullptr, 0, in));
	fid *fids[] = {&pair.server_cq->fid, &cntr->fid};
	ASSERT_EQ(0, fi_trywait(pair.fabric, fids, 2));
	EXPECT_FALSE(cq_nest.wakes_within(50));  // nothing sent yet
	ASSERT_EQ(0, fi_send(pair.client, "nested", 7, nullptr, 0, nullptr));
	EXPECT_TRUE(cq_nest.wakes_within(kTimeoutMs));
	EXPECT_TRUE(cntr_nest.wakes_within(kTimeoutMs));
	fi_cq_data_entry e{};
	ssize_t n = read_by_nest(pair.fabric, &pair.server_cq->fid, cq_nest,
				 [&] { return fi_cq_read(pair.server_cq, &e, 1); });
	ASSERT_EQ(1, n) << fi_strerror(static_cast<int>(-n));
	EXPECT_EQ(in, e.op_context);
	EXPECT_STREQ("nested", in);
	EXPECT_EQ(1u, fi_cntr_read(cntr));
	// The EQ's fd too.
	fi_eq_entry written{};
	written.context = &written;
	ASSERT_EQ(static_cast<ssize_t>(sizeof(written)),
		  fi_eq_write(pair.server_eq, FI_NOTIFY, &written, sizeof(written), 0));
	EXPECT_TRUE(eq_nest.wakes_within(kTimeoutMs));
	uint32_t event = 0;
	fi_eq_entry got{};
	EXPECT_EQ(static_cast<ssize_t>(sizeof(got)),
		  fi_eq_read(pair.server_eq, &event, &got, sizeof(got), 0));
	EXPECT_EQ(&written, got.context);
	// The counter is bound to the server endpoint: that goes first.
	EXPECT_EQ(0, fi_close(&pair.server->fid));
	pair.server = nullptr;
	EXPECT_EQ(0, fi_close(&cntr->fid));
}

} // namespace
