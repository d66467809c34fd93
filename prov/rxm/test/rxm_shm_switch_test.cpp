// Same-host peers of tcp;ofi_rxm move to shm (FI_OFI_RXM_USE_SHM, rxm_shm.h): two forked
// processes on one host exchange messages of 0 B - 4 MiB both ways, untagged and tagged,
// starting at the first send (so the switch happens while messages are in flight) and again
// once it is done. Every message must arrive intact and in order. Whether the traffic left
// the tcp connection is read from the kernel: the TCP_INFO byte counters of every TCP socket
// of the process (a fact outside our code) must stay flat once the peers moved, and must grow
// when one side has the switch off.
//
// Each process is a fresh fork that sets its environment before its first libfabric call
// (parameters are read once per process); the gtest process itself never opens libfabric.
#include "prov/rxm/test/rxm_test_provider.h"

#include <gtest/gtest.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <dirent.h>
#include <netinet/in.h>
#include <linux/tcp.h> // tcp_info with the byte counters (glibc's lacks them)
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

#define CHILD_CHECK(cond, ...)                                                    \
	do {                                                                      \
		if (!(cond)) {                                                    \
			fprintf(stderr, "[pid %d] %s:%d: ", getpid(), __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                             \
			fprintf(stderr, "\n");                                    \
			return false;                                             \
		}                                                                 \
	} while (0)

// Bytes sent (acked) plus received over every TCP socket this process holds.
uint64_t tcp_bytes()
{
	uint64_t total = 0;
	DIR *dir = opendir("/proc/self/fd");
	if (!dir)
		return 0;
	while (dirent *e = readdir(dir)) {
		int fd = atoi(e->d_name);
		if (fd <= 2 || fd == dirfd(dir))
			continue;
		tcp_info info{};
		socklen_t len = sizeof(info);
		if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) == 0)
			total += info.tcpi_bytes_acked + info.tcpi_bytes_received;
	}
	closedir(dir);
	return total;
}

uint8_t pattern(uint64_t seq, size_t i) { return static_cast<uint8_t>(seq * 131 + i * 7 + 1); }

struct Peer {
	fi_info *info = nullptr;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_ep *ep = nullptr;
	fi_addr_t peer = FI_ADDR_UNSPEC;
	std::vector<uint8_t> rx;
	std::vector<std::vector<uint8_t>> tx;

	~Peer()
	{
		if (ep)
			fi_close(&ep->fid);
		if (cq)
			fi_close(&cq->fid);
		if (av)
			fi_close(&av->fid);
		if (domain)
			fi_close(&domain->fid);
		if (fabric)
			fi_close(&fabric->fid);
		fi_freeinfo(info);
	}

	bool blocking = false; // a CQ with a wait object, read with fi_cq_sread

	bool open(int to_peer, int from_peer)
	{
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG | FI_TAGGED;
		hints->fabric_attr->prov_name = strdup(rxm_test::provider());
		hints->addr_format = FI_SOCKADDR_IN;
		hints->domain_attr->mr_mode = rxm_test::mr_mode();
		int ret = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE,
				     hints, &info);
		fi_freeinfo(hints);
		CHILD_CHECK(ret == 0, "fi_getinfo: %s", fi_strerror(-ret));
		CHILD_CHECK(fi_fabric(info->fabric_attr, &fabric, nullptr) == 0, "fi_fabric");
		CHILD_CHECK(fi_domain(fabric, info, &domain, nullptr) == 0, "fi_domain");
		fi_av_attr av_attr{};
		av_attr.type = FI_AV_TABLE;
		CHILD_CHECK(fi_av_open(domain, &av_attr, &av, nullptr) == 0, "fi_av_open");
		fi_cq_attr cq_attr{};
		cq_attr.format = FI_CQ_FORMAT_TAGGED;
		cq_attr.wait_obj = blocking ? FI_WAIT_UNSPEC : FI_WAIT_NONE;
		CHILD_CHECK(fi_cq_open(domain, &cq_attr, &cq, nullptr) == 0, "fi_cq_open");
		CHILD_CHECK(fi_endpoint(domain, info, &ep, nullptr) == 0, "fi_endpoint");
		CHILD_CHECK(fi_ep_bind(ep, &av->fid, 0) == 0, "bind av");
		CHILD_CHECK(fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) == 0, "bind cq");
		CHILD_CHECK(fi_enable(ep) == 0, "fi_enable");
		uint8_t name[64];
		size_t len = sizeof(name);
		CHILD_CHECK(fi_getname(&ep->fid, name, &len) == 0, "fi_getname");
		uint32_t n = static_cast<uint32_t>(len);
		CHILD_CHECK(write(to_peer, &n, 4) == 4 && write(to_peer, name, len) == ssize_t(len),
			    "sending the name");
		uint8_t theirs[64];
		CHILD_CHECK(read(from_peer, &n, 4) == 4 && n <= sizeof(theirs) &&
				    read(from_peer, theirs, n) == ssize_t(n),
			    "reading the peer's name");
		CHILD_CHECK(fi_av_insert(av, theirs, 1, &peer, 0, nullptr) == 1, "fi_av_insert");
		return true;
	}

	// Sends sizes[i] (message seq_base + i) to the peer while receiving the same list from
	// it; every received message is checked for length, content and order.
	bool exchange(const std::vector<size_t> &sizes, uint64_t seq_base, bool tagged)
	{
		size_t max = 1;
		for (size_t s : sizes)
			max = std::max(max, s);
		rx.assign(max, 0);
		tx.resize(sizes.size());
		for (size_t i = 0; i < sizes.size(); i++) {
			tx[i].resize(sizes[i]);
			for (size_t j = 0; j < sizes[i]; j++)
				tx[i][j] = pattern(seq_base + i, j);
		}
		size_t sent = 0, done = 0, received = 0;
		bool recv_posted = false;
		auto deadline = Clock::now() + std::chrono::seconds(40);
		while (done < sizes.size() || received < sizes.size()) {
			CHILD_CHECK(Clock::now() < deadline,
				    "timed out: %zu/%zu sent, %zu completed, %zu received", sent,
				    sizes.size(), done, received);
			if (!recv_posted && received < sizes.size()) {
				uint64_t seq = seq_base + received;
				ssize_t r = tagged ? fi_trecv(ep, rx.data(), rx.size(), nullptr, peer, seq,
							      0, nullptr)
						   : fi_recv(ep, rx.data(), rx.size(), nullptr, peer,
							     nullptr);
				CHILD_CHECK(r == 0 || r == -FI_EAGAIN, "recv: %zd", r);
				recv_posted = r == 0;
			}
			while (sent < sizes.size() && sent - done < 8) {
				const std::vector<uint8_t> &m = tx[sent];
				ssize_t r = tagged ? fi_tsend(ep, m.data(), m.size(), nullptr, peer,
							      seq_base + sent, nullptr)
						   : fi_send(ep, m.data(), m.size(), nullptr, peer,
							     nullptr);
				if (r == -FI_EAGAIN)
					break;
				CHILD_CHECK(r == 0, "send of %zu bytes: %s", m.size(), fi_strerror(-r));
				sent++;
			}
			fi_cq_tagged_entry comp[8];
			ssize_t n = blocking ? fi_cq_sread(cq, comp, 8, nullptr, 1000)
					     : fi_cq_read(cq, comp, 8);
			if (n == -FI_EAGAIN || n == -FI_ETIMEDOUT)
				continue;
			if (n == -FI_EAVAIL) {
				fi_cq_err_entry err{};
				fi_cq_readerr(cq, &err, 0);
				CHILD_CHECK(false, "error completion: %s", fi_strerror(err.err));
			}
			CHILD_CHECK(n > 0, "fi_cq_read: %zd", n);
			for (ssize_t k = 0; k < n; k++) {
				if (comp[k].flags & FI_SEND) {
					done++;
					continue;
				}
				uint64_t seq = seq_base + received;
				size_t want = sizes[received];
				CHILD_CHECK(comp[k].len == want, "message %lu: %zu bytes, expected %zu",
					    static_cast<unsigned long>(seq), comp[k].len, want);
				CHILD_CHECK(!tagged || comp[k].tag == seq, "tag %lu, expected %lu",
					    static_cast<unsigned long>(comp[k].tag),
					    static_cast<unsigned long>(seq));
				for (size_t j = 0; j < want; j++)
					CHILD_CHECK(rx[j] == pattern(seq, j),
						    "message %lu (%zu bytes): byte %zu differs",
						    static_cast<unsigned long>(seq), want, j);
				received++;
				recv_posted = false;
			}
		}
		return true;
	}
};

const std::vector<size_t> kAllSizes = {0,	  1,	   64,	    1000,    4096,   65536,
				       65537,	  100000,  131072,  131073,  262144, 1 << 20,
				       3333333, 4 << 20};

// One side of a pair: `first` sends a burst at once (the connection opens, and moves, under
// it), the other answers likewise; then both wait for the move and check the tcp counters
// over a second exchange of every size.
bool run_peer(int to_peer, int from_peer, bool expect_shm, bool blocking)
{
	Peer p;
	p.blocking = blocking;
	if (!p.open(to_peer, from_peer))
		return false;
	// During the switch: 200 messages each way, started at once.
	std::vector<size_t> burst;
	for (size_t i = 0; i < 200; i++)
		burst.push_back(kAllSizes[i % kAllSizes.size()] % 300000);
	if (!p.exchange(burst, 0, false))
		return false;
	// Small round trips while the switch settles: the same number on both sides (a side
	// that stopped early would leave the other waiting).
	for (uint64_t seq = 1000; seq < 1200; seq += 10)
		if (!p.exchange({8, 8, 8, 8, 8, 8, 8, 8, 8, 8}, seq, true))
			return false;
	// After: every size, both ways, untagged and tagged.
	uint64_t start = tcp_bytes();
	if (!p.exchange(kAllSizes, 10000, false) || !p.exchange(kAllSizes, 20000, true))
		return false;
	uint64_t moved = tcp_bytes() - start;
	if (expect_shm)
		CHILD_CHECK(moved == 0, "%lu bytes went over tcp after the switch",
			    static_cast<unsigned long>(moved));
	else
		// (rendezvous data is pulled by process_vm_readv: the small sizes count)
		CHILD_CHECK(moved > 10000, "only %lu bytes over tcp, yet a side has shm off",
			    static_cast<unsigned long>(moved));
	if (blocking) {
		// Readers asleep in fi_cq_sread wake for messages over shm: 50 one-message
		// exchanges, each a sleep on both sides; a missed wake-up costs the 1 s timeout.
		auto begin = Clock::now();
		for (uint64_t seq = 40000; seq < 40050; seq++)
			if (!p.exchange({64}, seq, true))
				return false;
		auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() -
										    begin);
		CHILD_CHECK(took.count() < 5000, "50 blocking exchanges took %lld ms",
			    static_cast<long long>(took.count()));
	}
	// Both sides finish their last exchange before either closes.
	return p.exchange({8}, 30000, true);
}

// Forks the two peers with their environments (space-separated NAME=VALUE); both must succeed.
void run_pair(const char *env_a, const char *env_b, bool expect_shm, bool blocking = false)
{
	int ab[2], ba[2];
	ASSERT_EQ(pipe(ab), 0);
	ASSERT_EQ(pipe(ba), 0);
	pid_t pids[2];
	for (int side = 0; side < 2; side++) {
		pids[side] = fork();
		ASSERT_GE(pids[side], 0);
		if (pids[side] == 0) {
			alarm(120);
			const char *env = side == 0 ? env_a : env_b;
			std::string assignments(env);
			size_t pos = 0;
			while (pos < assignments.size()) {
				size_t end = assignments.find(' ', pos);
				std::string one = assignments.substr(pos, end - pos);
				if (!one.empty())
					putenv(strdup(one.c_str()));
				pos = end == std::string::npos ? assignments.size() : end + 1;
			}
			bool ok = side == 0 ? run_peer(ab[1], ba[0], expect_shm, blocking)
					    : run_peer(ba[1], ab[0], expect_shm, blocking);
			_exit(ok ? 0 : 1);
		}
	}
	for (int fd : {ab[0], ab[1], ba[0], ba[1]})
		close(fd);
	for (int side = 0; side < 2; side++) {
		int status = 0;
		ASSERT_EQ(waitpid(pids[side], &status, 0), pids[side]);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			<< "peer " << side << " status " << status;
	}
}

bool tcp_layering()
{
	return std::string(rxm_test::provider()) == "tcp;ofi_rxm";
}

TEST(RxmShmSwitch, BothOnMoveToShmInOrderAndIntact)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1", "FI_OFI_RXM_USE_SHM=1", true);
}

TEST(RxmShmSwitch, BothOnWithoutSharedReceiveContext)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_SRX=0",
		 "FI_OFI_RXM_USE_SHM=1 FI_OFI_RXM_USE_SRX=0", true);
}

TEST(RxmShmSwitch, BlockingReadersSleepAndWake)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1", "FI_OFI_RXM_USE_SHM=1", true, true);
}

TEST(RxmShmSwitch, OneSideOffStaysOnTcp)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=1", "FI_OFI_RXM_USE_SHM=0", false);
}

TEST(RxmShmSwitch, OtherSideOffStaysOnTcp)
{
	if (!tcp_layering())
		GTEST_SKIP() << "the switch is tested over tcp;ofi_rxm";
	run_pair("FI_OFI_RXM_USE_SHM=0", "FI_OFI_RXM_USE_SHM=1", false);
}

} // namespace
