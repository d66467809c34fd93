// The harness of the rxm_shm_switch tests (rxm_shm_switch_test.cpp, rxm_shm_switch_rma_test.cpp):
// a peer process over tcp;ofi_rxm (fi_* objects, the address exchange over pipes, message
// exchanges checked for length, content and order), the kernel's TCP byte counters, and the
// fork of a pair of peers with their environments.
#pragma once

#include "prov/rxm/test/rxm_test_provider.h"
#include "test/tcp_bytes.h"

#include <gtest/gtest.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <dirent.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

namespace shm_switch_test {

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

// The kernel's TCP byte counters of this process (shared with peer_failure_test).
using test_tcp::TcpSnapshot;
using test_tcp::tcp_snapshot;
using test_tcp::tcp_bytes;

// What crossed the sockets that were open at both snapshots. A connection opened or closed
// in between (a duplicate connect resolved late, a loser's socket going away) carries only
// its handshake; the payloads under test would show on the connection that moved.
inline uint64_t tcp_bytes_on_kept(const TcpSnapshot &before, const TcpSnapshot &after)
{
	uint64_t sum = 0;
	for (auto &[ino, n] : after.bytes) {
		auto it = before.bytes.find(ino);
		if (it != before.bytes.end())
			sum += n - it->second;
		else
			fprintf(stderr, "[pid %d] a TCP socket opened meanwhile: %lu bytes\n", getpid(),
				static_cast<unsigned long>(n));
	}
	return sum;
}

inline uint8_t pattern(uint64_t seq, size_t i) { return static_cast<uint8_t>(seq * 131 + i * 7 + 1); }

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

	// RMA (rma set before open): a window of kWindow bytes the peer may read and write,
	// registered with FI_REMOTE_READ | FI_REMOTE_WRITE; the peer's key and base address.
	static constexpr size_t kWindow = 4 << 20;
	bool rma = false;
	// Opens the domain FI_THREAD_DOMAIN (this process calls from one thread): rxm's lower
	// domains then run without locks (rxm_domain.h, lower_domains_need_no_lock).
	bool thread_domain = false;
	std::vector<uint8_t> win;
	fid_mr *win_mr = nullptr;
	uint64_t peer_key = 0;
	uint64_t peer_base = 0;
	// Completions seen by poll(): each context's status (0 or the error), and the remote CQ
	// data of the peer's fi_writedata calls.
	std::map<void *, int> finished;
	std::vector<uint64_t> remote_data;

	~Peer()
	{
		if (win_mr)
			fi_close(&win_mr->fid);
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
	// With blocking: never calls fi_cq_sread (whose sleep runs fi_trywait), only fi_cq_read,
	// as an application that polls the CQ's FI_GETWAIT fd without fi_trywait.
	bool no_trywait = false;
	// The layering, when not the tests' (rxm_test::provider()): "shm;ofi_rxm" takes shm's
	// own addresses.
	const char *prov = nullptr;

	bool open(int to_peer, int from_peer)
	{
		fi_info *hints = fi_allocinfo();
		hints->ep_attr->type = FI_EP_RDM;
		hints->caps = FI_MSG | FI_TAGGED;
		if (rma)
			hints->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE |
				       FI_SOURCE; // remote CQ data names its writer
		const char *layering = prov ? prov : rxm_test::provider();
		bool over_shm = strcmp(layering, "shm;ofi_rxm") == 0;
		hints->fabric_attr->prov_name = strdup(layering);
		if (!over_shm)
			hints->addr_format = FI_SOCKADDR_IN;
		hints->domain_attr->mr_mode = rxm_test::mr_mode();
		int ret = over_shm ? fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info)
				   : fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr,
						FI_SOURCE, hints, &info);
		fi_freeinfo(hints);
		CHILD_CHECK(ret == 0, "fi_getinfo: %s", fi_strerror(-ret));
		if (thread_domain)
			info->domain_attr->threading = FI_THREAD_DOMAIN;
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
		return !rma || open_window(to_peer, from_peer);
	}

	bool open_window(int to_peer, int from_peer)
	{
		win.assign(kWindow, 0);
		int ret = fi_mr_reg(domain, win.data(), win.size(), FI_REMOTE_READ | FI_REMOTE_WRITE,
				    0, 0x5000 + getpid(), 0, &win_mr, nullptr);
		CHILD_CHECK(ret == 0, "fi_mr_reg: %s", fi_strerror(-ret));
		uint64_t mine[2] = {fi_mr_key(win_mr),
				    (info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
					    ? reinterpret_cast<uintptr_t>(win.data())
					    : 0};
		uint64_t theirs[2];
		CHILD_CHECK(write(to_peer, mine, sizeof(mine)) == sizeof(mine) &&
				    read(from_peer, theirs, sizeof(theirs)) == sizeof(theirs),
			    "exchanging the window's key");
		peer_key = theirs[0];
		peer_base = theirs[1];
		return true;
	}

	// Reads the CQ once: completions go to `finished` by context (errors too), remote CQ
	// data to `remote_data`.
	bool poll()
	{
		fi_cq_tagged_entry comp[8];
		fi_addr_t src[8];
		ssize_t n = fi_cq_readfrom(cq, comp, 8, src);
		if (n == -FI_EAGAIN)
			return true;
		if (n == -FI_EAVAIL) {
			fi_cq_err_entry err{};
			CHILD_CHECK(fi_cq_readerr(cq, &err, 0) == 1, "fi_cq_readerr");
			CHILD_CHECK(err.op_context, "error completion without a context: %s",
				    fi_strerror(err.err));
			finished[err.op_context] = err.err ? -err.err : -FI_EIO;
			return true;
		}
		CHILD_CHECK(n > 0, "fi_cq_read: %zd", n);
		for (ssize_t k = 0; k < n; k++) {
			if (comp[k].flags & FI_REMOTE_CQ_DATA) {
				CHILD_CHECK(comp[k].flags & FI_REMOTE_WRITE, "remote CQ data flags %lx",
					    static_cast<unsigned long>(comp[k].flags));
				CHILD_CHECK(!(info->caps & FI_SOURCE) || src[k] == peer,
					    "remote CQ data from %llu, not from the peer %llu",
					    static_cast<unsigned long long>(src[k]),
					    static_cast<unsigned long long>(peer));
				remote_data.push_back(comp[k].data);
				continue;
			}
			finished[comp[k].op_context] = 0;
		}
		return true;
	}

	// Waits for the completion of `ctx`; *status is its status.
	bool wait_for(void *ctx, int *status)
	{
		auto deadline = Clock::now() + std::chrono::seconds(30);
		while (!finished.count(ctx)) {
			CHILD_CHECK(Clock::now() < deadline, "no completion for %p", ctx);
			if (!poll())
				return false;
		}
		*status = finished[ctx];
		finished.erase(ctx);
		return true;
	}

	// Posts an operation, retrying while it says -FI_EAGAIN (progressing meanwhile).
	template <class Post>
	bool post(const char *what, Post fn)
	{
		auto deadline = Clock::now() + std::chrono::seconds(30);
		for (;;) {
			ssize_t r = fn();
			if (r == 0)
				return true;
			CHILD_CHECK(r == -FI_EAGAIN, "%s: %s", what, fi_strerror(static_cast<int>(-r)));
			CHILD_CHECK(Clock::now() < deadline, "%s: -FI_EAGAIN for 30 s", what);
			if (!poll())
				return false;
		}
	}

	// fi_write / fi_read of len bytes at `offset` in the peer's window (under `key`);
	// *status is the completion's status.
	bool rma_op(bool is_write, void *buf, size_t len, uint64_t offset, uint64_t key,
		    int *status)
	{
		int ctx = 0;
		if (!post(is_write ? "fi_write" : "fi_read", [&] {
			    return is_write ? fi_write(ep, buf, len, nullptr, peer, peer_base + offset,
						       key, &ctx)
					    : fi_read(ep, buf, len, nullptr, peer, peer_base + offset, key,
						      &ctx);
		    }))
			return false;
		return wait_for(&ctx, status);
	}

	// Both sides pass here together: an 8-byte tagged message each way.
	bool sync(uint64_t tag)
	{
		uint64_t ignored;
		return swap(tag, tag, &ignored);
	}

	// sync() carrying a value each way: *theirs is the peer's `mine`.
	bool swap(uint64_t tag, uint64_t mine, uint64_t *theirs)
	{
		uint64_t out = mine, in = 0;
		int rctx = 0, sctx = 0, status = 0;
		if (!post("fi_trecv", [&] { return fi_trecv(ep, &in, 8, nullptr, peer, tag, 0, &rctx); }) ||
		    !post("fi_tsend", [&] { return fi_tsend(ep, &out, 8, nullptr, peer, tag, &sctx); }))
			return false;
		if (!wait_for(&sctx, &status))
			return false;
		CHILD_CHECK(status == 0, "sync send: %s", fi_strerror(-status));
		if (!wait_for(&rctx, &status))
			return false;
		CHILD_CHECK(status == 0, "sync receive: %s", fi_strerror(-status));
		*theirs = in;
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
			ssize_t n = blocking && !no_trywait ? fi_cq_sread(cq, comp, 8, nullptr, 1000)
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

// Messages both ways while the connection opens and moves (as rxm_shm_switch_test.cpp).
inline bool settle(Peer &p, bool expect_shm)
{
	if (!p.exchange({8, 70000, 8, 300000}, 0, false))
		return false;
	for (uint64_t seq = 1000; seq < 1200; seq += 10)
		if (!p.exchange({8, 8, 8, 8, 8, 8, 8, 8, 8, 8}, seq, true))
			return false;
	// Until both directions moved (a loaded machine may lag): a round trip that leaves the
	// TCP counters of both processes flat. Both decide on the same pair of answers.
	for (uint64_t round = 0; expect_shm && round < 500; round++) {
		TcpSnapshot before = tcp_snapshot();
		uint64_t theirs = 0;
		if (!p.swap(2000 + round, 0, &theirs))
			return false;
		uint64_t flat = tcp_bytes_on_kept(before, tcp_snapshot()) == 0;
		if (!p.swap(3000 + round, flat, &theirs))
			return false;
		if (flat && theirs)
			return true;
	}
	CHILD_CHECK(!expect_shm, "the connection never moved to shm");
	return true;
}

// Forks the two peers with their environments (space-separated NAME=VALUE); body(to_peer,
// from_peer) runs in each; both must succeed.
inline void run_forked_pair(const char *env_a, const char *env_b,
			    const std::function<bool(int, int)> &body)
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
			bool ok = side == 0 ? body(ab[1], ba[0]) : body(ba[1], ab[0]);
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

inline bool tcp_layering()
{
	return std::string(rxm_test::provider()) == "tcp;ofi_rxm";
}

} // namespace shm_switch_test
