// Many blocking CQs on one rxm domain: 100 endpoints, each bound to its own FI_WAIT_FD CQ.
// Every one of them must still wake up a reader blocked in fi_cq_sread when a message arrives
// (Linux refuses to nest one fd in too many epoll sets, so a design that adds the core's
// wait fds to every CQ's epoll set stops working after a few dozen CQs).
//
// Its own main() shrinks rxm's buffers before the provider reads its parameters, so 100
// endpoints cost a few MiB, not hundreds.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "src/registry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace {

#ifdef HAVE_TCP
fi_provider *(*volatile link_tcp_scale)() = ofi_tcp_provider_init;
fi_provider *(*volatile link_rxm_scale)() = ofi_rxm_provider_init;
#endif

constexpr int kCqs = 100;

TEST(RxmWaitScale, HundredBlockingCqsOnOneDomainAllWakeUp)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	hints->addr_format = FI_SOCKADDR_IN;
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
#ifdef HAVE_TCP
	ASSERT_EQ(0, ret);
#else
	if (ret)
		GTEST_SKIP() << "built without the tcp provider";
#endif
	fid_fabric *fabric;
	fid_domain *domain;
	fid_av *av;
	ASSERT_EQ(0, fi_fabric(info->fabric_attr, &fabric, nullptr));
	ASSERT_EQ(0, fi_domain(fabric, info, &domain, nullptr));
	fi_av_attr av_attr{};
	av_attr.type = FI_AV_TABLE;
	ASSERT_EQ(0, fi_av_open(domain, &av_attr, &av, nullptr));
	std::vector<fid_cq *> cqs(kCqs, nullptr);
	std::vector<fid_ep *> eps(kCqs, nullptr);
	std::vector<std::vector<uint8_t>> names(kCqs, std::vector<uint8_t>(64));
	for (int i = 0; i < kCqs; i++) {
		SCOPED_TRACE(i);
		fi_cq_attr cq_attr{};
		cq_attr.format = FI_CQ_FORMAT_MSG;
		cq_attr.wait_obj = FI_WAIT_FD;
		ASSERT_EQ(0, fi_cq_open(domain, &cq_attr, &cqs[i], nullptr));
		ASSERT_EQ(0, fi_endpoint(domain, info, &eps[i], nullptr));
		ASSERT_EQ(0, fi_ep_bind(eps[i], &av->fid, 0));
		ASSERT_EQ(0, fi_ep_bind(eps[i], &cqs[i]->fid, FI_TRANSMIT | FI_RECV));
		ASSERT_EQ(0, fi_enable(eps[i]));
		size_t len = names[i].size();
		ASSERT_EQ(0, fi_getname(&eps[i]->fid, names[i].data(), &len));
	}

	// A sender on its own domain (its own thread drives it) sends one message to some of the
	// endpoints, each 100 ms after their reader went to sleep; each reader must wake well
	// before its 5 s timeout.
	fid_domain *sdomain;
	fid_av *sav;
	fid_cq *scq;
	fid_ep *sep;
	ASSERT_EQ(0, fi_domain(fabric, info, &sdomain, nullptr));
	ASSERT_EQ(0, fi_av_open(sdomain, &av_attr, &sav, nullptr));
	fi_cq_attr scq_attr{};
	scq_attr.format = FI_CQ_FORMAT_MSG;
	ASSERT_EQ(0, fi_cq_open(sdomain, &scq_attr, &scq, nullptr));
	ASSERT_EQ(0, fi_endpoint(sdomain, info, &sep, nullptr));
	ASSERT_EQ(0, fi_ep_bind(sep, &sav->fid, 0));
	ASSERT_EQ(0, fi_ep_bind(sep, &scq->fid, FI_TRANSMIT | FI_RECV));
	ASSERT_EQ(0, fi_enable(sep));
	for (int i : {0, 1, kCqs / 2, kCqs - 2, kCqs - 1}) {
		SCOPED_TRACE(i);
		fi_addr_t dest = FI_ADDR_NOTAVAIL;
		ASSERT_EQ(1, fi_av_insert(sav, names[i].data(), 1, &dest, 0, nullptr));
		uint64_t in = 0, out = 1000 + static_cast<uint64_t>(i);
		int rctx, sctx;
		ASSERT_EQ(0, fi_recv(eps[i], &in, sizeof(in), nullptr, FI_ADDR_UNSPEC, &rctx));
		std::thread sender([&] {
			std::this_thread::sleep_for(std::chrono::milliseconds(100));
			EXPECT_EQ(0, fi_send(sep, &out, sizeof(out), nullptr, dest, &sctx));
			fi_cq_msg_entry e;
			auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
			while (fi_cq_read(scq, &e, 1) != 1 && std::chrono::steady_clock::now() < until)
				std::this_thread::sleep_for(std::chrono::microseconds(200));
		});
		auto start = std::chrono::steady_clock::now();
		fi_cq_msg_entry e{};
		ssize_t n;
		do { // a wake-up may bring the connection request first, then the message
			n = fi_cq_sread(cqs[i], &e, 1, nullptr, 5000);
		} while (n == -FI_EAGAIN && std::chrono::steady_clock::now() - start <
						   std::chrono::seconds(5));
		double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
				      .count();
		sender.join();
		ASSERT_EQ(1, n);
		EXPECT_EQ(&rctx, e.op_context);
		EXPECT_EQ(1000 + static_cast<uint64_t>(i), in);
		EXPECT_LT(secs, 2.0) << "the blocked reader was not woken by the message";
	}
	EXPECT_EQ(0, fi_close(&sep->fid));
	EXPECT_EQ(0, fi_close(&scq->fid));
	EXPECT_EQ(0, fi_close(&sav->fid));
	EXPECT_EQ(0, fi_close(&sdomain->fid));
	for (int i = 0; i < kCqs; i++) {
		EXPECT_EQ(0, fi_close(&eps[i]->fid));
		EXPECT_EQ(0, fi_close(&cqs[i]->fid));
	}
	EXPECT_EQ(0, fi_close(&av->fid));
	EXPECT_EQ(0, fi_close(&domain->fid));
	EXPECT_EQ(0, fi_close(&fabric->fid));
	fi_freeinfo(info);
}

} // namespace

int main(int argc, char **argv)
{
	// Read once, at provider init: set before the first fi_getinfo.
	setenv("FI_OFI_RXM_BUFFER_SIZE", "1024", 1);
	setenv("FI_OFI_RXM_MSG_TX_SIZE", "16", 1);
	setenv("FI_OFI_RXM_MSG_RX_SIZE", "16", 1);
	::testing::InitGoogleTest(&argc, argv);
	return RUN_ALL_TESTS();
}
