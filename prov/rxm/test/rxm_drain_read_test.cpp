// A reader that drains its CQ until it finds nothing: Open MPI's ofi MTL calls fi_cq_read
// again after every read that returned entries, until -FI_EAGAIN, and only then answers the
// message (MPI_Recv returns, MPI_Send follows). That second read sits on every message's
// turnaround; over tcp;ofi_rxm it made a recv and an epoll_wait that found nothing (2.06
// system calls between a message's recv and the answer's sendmsg, 0.17 in fi_tagged_pingpong,
// PROFILE-wire.md "Session 12"). The pass right after a busy one now rests (util's
// ProgressEngine) and rxm reads the core EQ on it only as on a busy pass: no system call.
#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/rxm/test/rxm_test_connections.h"
#include "prov/util/domain.h"
#include "prov/util/fid_object.h"

#include <gtest/gtest.h>

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <vector>

namespace {
std::atomic<bool> counting{false};
std::atomic<int> recv_calls{0}, epoll_calls{0};
} // namespace

// The program links the library statically: the providers' calls come here. Count, then do
// what libc does.
extern "C" ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	if (counting.load(std::memory_order_relaxed))
		recv_calls.fetch_add(1, std::memory_order_relaxed);
	return syscall(SYS_recvfrom, fd, buf, len, flags, nullptr, nullptr);
}

extern "C" int epoll_wait(int epfd, struct epoll_event *events, int maxevents, int timeout)
{
	if (counting.load(std::memory_order_relaxed))
		epoll_calls.fetch_add(1, std::memory_order_relaxed);
	return static_cast<int>(syscall(SYS_epoll_pwait, epfd, events, maxevents, timeout,
					nullptr, 0));
}

namespace {

using Node = rxm_test::ContextNode;

// Over the socket throughout: rxm moves a same-host peer to shm (FI_OFI_RXM_USE_SHM, on by
// default) after its first messages, and then no socket is read at all.
class RxmDrainRead : public rxm_test::TcpRxmConnections {
protected:
	void SetUp() override
	{
		TcpRxmConnections::SetUp();
		use_shm_ = params().use_shm;
		params().use_shm = false;
	}
	void TearDown() override
	{
		params().use_shm = use_shm_;
		TcpRxmConnections::TearDown();
	}
	// The provider's parameters, read at its start; this test program links it statically.
	static rxm::RxmParams &params() { return const_cast<rxm::RxmParams &>(rxm::params()); }

private:
	bool use_shm_ = true;
};

TEST_F(RxmDrainRead, ReadAfterTheOneThatReturnedAMessageMakesNoSystemCall)
{
	auto client = std::make_unique<Node>(info);
	auto server = std::make_unique<Node>(info);
	fi_addr_t to_server = client->insert(*server);
	// Only a pass within ProgressEngine::kRestWindow (5 us) of the busy one rests; a
	// sanitizer build or a stall of a loaded machine may take longer between the two reads.
	auto *rxm_domain = util::fid_cast<rxm::RxmDomain>(&server->domain->fid, FI_CLASS_DOMAIN);
	ASSERT_NE(nullptr, rxm_domain);
	auto *core = util::fid_cast<util::Domain>(&rxm_domain->core()->fid, FI_CLASS_DOMAIN);
	ASSERT_NE(nullptr, core);
	core->engine().set_rest_window(std::chrono::seconds(60));
	constexpr int kRounds = 20;
	char in[kRounds + 1] = {}, out[kRounds + 1] = {};
	int calls = 0, misses = 0;
	// Round 0 sets the connection up (and makes the server's socket hot); then counted.
	for (int i = 0; i <= kRounds; i++) {
		out[i] = static_cast<char>('a' + i % 26);
		ASSERT_EQ(0, fi_recv(server->ep, &in[i], 1, nullptr, FI_ADDR_UNSPEC, &in[i]));
		ASSERT_EQ(0, fi_inject(client->ep, &out[i], 1, to_server));
		// As a busy MPI_Recv: read until the message is there.
		ASSERT_TRUE(rxm_test::poll_until(std::vector<Node *>{client.get(), server.get()},
						 [&] { return server->done.size() == 1; }));
		EXPECT_EQ(&in[i], server->done[0]);
		EXPECT_EQ(out[i], in[i]);
		server->done.clear();
		// The MTL's next read, before it answers.
		fi_cq_entry e[100];
		recv_calls = epoll_calls = 0;
		counting = true;
		ssize_t n = fi_cq_read(server->cq, e, 100);
		counting = false;
		if (i == 0)
			continue;
		EXPECT_EQ(-FI_EAGAIN, n);
		calls += recv_calls + epoll_calls;
		misses += recv_calls + epoll_calls > 0;
	}
	// Before: a recv and an epoll_wait in every round. Now none, except where a stall of
	// the test (a loaded machine) made rxm's time-based core EQ read fall on a read.
	EXPECT_LE(misses, kRounds / 5) << calls << " recv/epoll_wait calls in the read after "
				       << "the message, in " << misses << " of " << kRounds
				       << " rounds";
}

} // namespace
