// FI_THREAD_SAFE over tcp;ofi_rxm: several application threads use one endpoint and one
// domain at once, the way an MPI library with MPI_THREAD_MULTIPLE does. Every message is
// checked byte by byte and every operation must complete exactly once. Manual progress, so
// the threads reading the CQ are also the ones driving the provider, concurrently.
// These tests are the ThreadSanitizer set (test/sanitizers/run.sh tsan) and also run in
// make check. Ports: ephemeral (FI_SOURCE without a service).
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "config.h"
#include "src/registry.h"

namespace {

#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
#ifdef HAVE_RXM
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;
#endif

using Clock = std::chrono::steady_clock;
constexpr auto kDeadline = std::chrono::seconds(120);  // generous: TSan slows things 10x

// Eager (<= 16 KiB bounce buffers), SAR (<= 128 KiB) and rendezvous sizes with the defaults.
constexpr size_t kSizes[] = {8, 4000, 40000, 200000};

uint8_t pattern_byte(uint64_t tag, size_t i) { return static_cast<uint8_t>(tag * 31 + i * 7); }

fi_info *safe_rdm_info()
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->threading = FI_THREAD_SAFE;
	hints->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	// No FI_MR_LOCAL: the exchange test passes no descriptors (the other one registers anyway).
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	return ret ? nullptr : info;
}

// An endpoint with its own CQ and AV inside a (possibly shared) domain.
struct Endpoint {
	Endpoint(fid_domain *domain, fi_info *info)
	{
		fi_cq_attr cq_attr{};
		cq_attr.format = FI_CQ_FORMAT_TAGGED;
		cq_attr.size = 1024;
		fi_av_attr av_attr{};
		av_attr.type = FI_AV_TABLE;
		ok = fi_cq_open(domain, &cq_attr, &cq, nullptr) == 0 &&
		     fi_av_open(domain, &av_attr, &av, nullptr) == 0 &&
		     fi_endpoint(domain, info, &ep, nullptr) == 0 &&
		     fi_ep_bind(ep, &av->fid, 0) == 0 &&
		     fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) == 0 && fi_enable(ep) == 0;
	}
	~Endpoint()
	{
		if (ep) {
			EXPECT_EQ(0, fi_close(&ep->fid));
		}
		if (av) {
			EXPECT_EQ(0, fi_close(&av->fid));
		}
		if (cq) {
			EXPECT_EQ(0, fi_close(&cq->fid));
		}
	}
	fi_addr_t insert(const Endpoint &peer)
	{
		char name[128];
		size_t len = sizeof(name);
		fi_addr_t addr = FI_ADDR_NOTAVAIL;
		if (fi_getname(&peer.ep->fid, name, &len) == 0)
			fi_av_insert(av, name, 1, &addr, 0, nullptr);
		return addr;
	}
	fid_cq *cq = nullptr;
	fid_av *av = nullptr;
	fid_ep *ep = nullptr;
	bool ok = false;
};

struct Domain {
	explicit Domain(fi_info *info)
	{
		ok = fi_fabric(info->fabric_attr, &fabric, nullptr) == 0 &&
		     fi_domain(fabric, info, &domain, nullptr) == 0;
	}
	~Domain()
	{
		if (domain) {
			EXPECT_EQ(0, fi_close(&domain->fid));
		}
		if (fabric) {
			EXPECT_EQ(0, fi_close(&fabric->fid));
		}
	}
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	bool ok = false;
};

// Retries an operation while it says -FI_EAGAIN (other threads progress meanwhile).
template <typename Op> ssize_t post(Op op)
{
	auto until = Clock::now() + kDeadline;
	ssize_t ret;
	while ((ret = op()) == -FI_EAGAIN && Clock::now() < until)
		std::this_thread::yield();
	return ret;
}

// One side of the many-threads exchange: sends kCount tagged messages to the peer and
// receives kCount from it, with 2 sender threads, 1 receive-posting thread and 2 CQ readers.
class Side {
public:
	static constexpr int kCount = 96;

	Side(fid_domain *domain, fi_info *info, uint64_t tag_base)
	    : node(domain, info), tag_base_(tag_base)
	{
		for (int i = 0; i < kCount; i++) {
			in_[i].resize(kSizes[i % 4]);
			out_[i].resize(kSizes[i % 4]);
			for (size_t j = 0; j < out_[i].size(); j++)
				out_[i][j] = pattern_byte(tag_base + i, j);
		}
	}

	// Starts the threads; the peer's tags are peer_tag_base + i.
	void start(fi_addr_t peer, uint64_t peer_tag_base)
	{
		for (int first : {0, 1})
			threads_.emplace_back([this, peer, first] { send_every_other(peer, first); });
		threads_.emplace_back([this, peer_tag_base] { post_receives(peer_tag_base); });
		for (int r = 0; r < 2; r++)
			threads_.emplace_back([this, peer_tag_base] { read_cq(peer_tag_base); });
	}
	void join()
	{
		for (std::thread &t : threads_)
			t.join();
	}
	void expect_all_done()
	{
		EXPECT_EQ(0, post_failures.load());
		EXPECT_EQ(0, errors.load());
		EXPECT_EQ(0, corrupt.load());
		EXPECT_EQ(0, duplicates.load());
		EXPECT_EQ(kCount, sends_done.load());
		EXPECT_EQ(kCount, recvs_done.load());
	}

	Endpoint node;
	std::atomic<int> sends_done{0}, recvs_done{0}, errors{0}, corrupt{0}, duplicates{0},
		post_failures{0};

private:
	void send_every_other(fi_addr_t peer, int first)
	{
		for (int i = first; i < kCount; i += 2) {
			ssize_t ret = post([&] {
				return fi_tsend(node.ep, out_[i].data(), out_[i].size(), nullptr, peer,
						tag_base_ + i, &send_ctx_[i]);
			});
			if (ret)
				post_failures++;
		}
	}
	void post_receives(uint64_t peer_tag_base)
	{
		for (int i = 0; i < kCount; i++) {
			ssize_t ret = post([&] {
				return fi_trecv(node.ep, in_[i].data(), in_[i].size(), nullptr,
						FI_ADDR_UNSPEC, peer_tag_base + i, 0, &recv_ctx_[i]);
			});
			if (ret)
				post_failures++;
		}
	}
	void read_cq(uint64_t peer_tag_base)
	{
		auto until = Clock::now() + kDeadline;
		while ((sends_done.load() < kCount || recvs_done.load() < kCount) &&
		       errors.load() == 0 && Clock::now() < until) {
			fi_cq_tagged_entry e[4];
			ssize_t n = fi_cq_read(node.cq, e, 4);
			if (n == -FI_EAVAIL) {
				fi_cq_err_entry err{};
				if (fi_cq_readerr(node.cq, &err, 0) == 1) {
					ADD_FAILURE() << "error completion: " << fi_strerror(err.err);
					errors++;
				}
			}
			for (ssize_t k = 0; k < n; k++)
				account(e[k], peer_tag_base);
			if (n == -FI_EAGAIN)
				std::this_thread::yield();
		}
	}
	void account(const fi_cq_tagged_entry &e, uint64_t peer_tag_base)
	{
		auto *ctx = static_cast<int *>(e.op_context);
		if (ctx >= send_ctx_ && ctx < send_ctx_ + kCount) {
			if (++send_seen_[ctx - send_ctx_] != 1)
				duplicates++;
			sends_done++;
			return;
		}
		if (!(ctx >= recv_ctx_ && ctx < recv_ctx_ + kCount)) {
			ADD_FAILURE() << "completion with an unknown context";
			errors++;
			return;
		}
		int i = static_cast<int>(ctx - recv_ctx_);
		if (++recv_seen_[i] != 1)
			duplicates++;
		bool good = e.len == in_[i].size() && e.tag == peer_tag_base + i;
		for (size_t j = 0; good && j < in_[i].size(); j++)
			good = in_[i][j] == pattern_byte(peer_tag_base + i, j);
		if (!good)
			corrupt++;
		recvs_done++;
	}

	uint64_t tag_base_;
	std::vector<uint8_t> in_[kCount], out_[kCount];
	int send_ctx_[kCount] = {}, recv_ctx_[kCount] = {};  // only their addresses matter
	std::atomic<int> send_seen_[kCount] = {}, recv_seen_[kCount] = {};  // exactly once
	std::vector<std::thread> threads_;
};

class ThreadSafeRdm : public ::testing::Test {
protected:
	void SetUp() override
	{
		info = safe_rdm_info();
		if (!info)
			GTEST_SKIP() << "tcp;ofi_rxm with FI_THREAD_SAFE is not available";
		ASSERT_EQ(FI_THREAD_SAFE, info->domain_attr->threading);
	}
	void TearDown() override { fi_freeinfo(info); }
	fi_info *info = nullptr;
};

TEST_F(ThreadSafeRdm, FiveThreadsPerEndpointSendReceiveAndReadTheCq)
{
	Domain da(info), db(info);
	ASSERT_TRUE(da.ok && db.ok);
	Side a(da.domain, info, 1000), b(db.domain, info, 5000);
	ASSERT_TRUE(a.node.ok && b.node.ok);
	fi_addr_t b_at_a = a.node.insert(b.node), a_at_b = b.node.insert(a.node);
	ASSERT_NE(FI_ADDR_NOTAVAIL, b_at_a);
	ASSERT_NE(FI_ADDR_NOTAVAIL, a_at_b);
	auto t0 = Clock::now();
	a.start(b_at_a, 5000);
	b.start(a_at_b, 1000);
	a.join();
	b.join();
	printf("2 x %d messages (8 B - 200 KB) with 5 threads per endpoint: %.2f s\n",
	       Side::kCount, std::chrono::duration<double>(Clock::now() - t0).count());
	a.expect_all_done();
	b.expect_all_done();
}

// Prints the error completion behind -FI_EAVAIL; true if there was one.
bool report_error(fid_cq *cq, ssize_t ret, const char *what, size_t size)
{
	if (ret != -FI_EAVAIL)
		return false;
	fi_cq_err_entry err{};
	if (fi_cq_readerr(cq, &err, 0) == 1)
		ADD_FAILURE() << what << " of " << size << " bytes failed: " << fi_strerror(err.err)
			      << " (prov_errno " << err.prov_errno << ")";
	return true;
}

// Threads open, use and close their own endpoints, CQs, AVs and memory registrations in one
// shared domain at the same time: connection setup, rendezvous registrations and teardown of
// one thread's objects run while the others use the domain's progress engine.
TEST_F(ThreadSafeRdm, ThreadsOpenUseAndCloseEndpointsInOneDomain)
{
	Domain d(info);
	ASSERT_TRUE(d.ok);
	constexpr int kThreads = 4, kRounds = 3;
	std::atomic<int> failures{0}, exchanged{0};
	auto worker = [&](int id) {
		for (int round = 0; round < kRounds; round++) {
			Endpoint x(d.domain, info), y(d.domain, info);
			if (!x.ok || !y.ok) {
				failures++;
				return;
			}
			fi_addr_t y_at_x = x.insert(y);
			uint64_t tag = static_cast<uint64_t>(id * 100 + round);
			for (size_t size : {size_t(100), size_t(200000)}) {
				std::vector<uint8_t> out(size), in(size);
				for (size_t j = 0; j < size; j++)
					out[j] = pattern_byte(tag, j);
				// Local-only registrations: rendezvous must not need more of them.
				fid_mr *mr = nullptr, *rmr = nullptr;
				if (fi_mr_reg(d.domain, out.data(), size, FI_SEND, 0, 0, 0, &mr, nullptr) ||
				    fi_mr_reg(d.domain, in.data(), size, FI_RECV, 0, 0, 0, &rmr, nullptr)) {
					failures++;
					return;
				}
				int sctx, rctx;
				bool sent = false, received = false;
				if (fi_trecv(y.ep, in.data(), size, fi_mr_desc(rmr), FI_ADDR_UNSPEC, tag, 0,
					     &rctx) ||
				    post([&] {
					    return fi_tsend(x.ep, out.data(), size, fi_mr_desc(mr), y_at_x,
							    tag, &sctx);
				    })) {
					failures++;
				} else {
					auto until = Clock::now() + kDeadline;
					bool error = false;
					while (!(sent && received) && !error && Clock::now() < until) {
						fi_cq_tagged_entry e;
						ssize_t n = fi_cq_read(x.cq, &e, 1);
						sent = sent || (n == 1 && e.op_context == &sctx);
						error = error || report_error(x.cq, n, "send", size);
						n = fi_cq_read(y.cq, &e, 1);
						received = received || (n == 1 && e.op_context == &rctx);
						error = error || report_error(y.cq, n, "receive", size);
					}
					if (sent && received && in == out)
						exchanged++;
					else
						failures++;
				}
				fi_close(&mr->fid);
				fi_close(&rmr->fid);
			}
		}
	};
	std::vector<std::thread> threads;
	for (int t = 0; t < kThreads; t++)
		threads.emplace_back(worker, t);
	for (std::thread &t : threads)
		t.join();
	EXPECT_EQ(0, failures.load());
	EXPECT_EQ(kThreads * kRounds * 2, exchanged.load());
}

}  // namespace
