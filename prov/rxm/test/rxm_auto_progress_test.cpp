// FI_PROGRESS_AUTO data progress (fi_domain(3)): an application that asks for it in its hints
// gets it, and then its transfers complete while it never calls into the library: the
// receiver's buffer fills and the sender's rendezvous completes without any CQ read, counter
// read or EQ read on either side. (Open MPI's mtl_ofi_data_progress=auto asks for this.)
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#include "config.h"
#include "src/registry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace {

struct AutoNode {
	explicit AutoNode(fi_info *info)
	{
		EXPECT_EQ(0, fi_fabric(info->fabric_attr, &fabric, nullptr));
		EXPECT_EQ(0, fi_domain(fabric, info, &domain, nullptr));
		fi_av_attr av_attr{};
		av_attr.type = FI_AV_TABLE;
		EXPECT_EQ(0, fi_av_open(domain, &av_attr, &av, nullptr));
		fi_cq_attr cq_attr{};
		cq_attr.format = FI_CQ_FORMAT_CONTEXT;
		EXPECT_EQ(0, fi_cq_open(domain, &cq_attr, &cq, nullptr));
		EXPECT_EQ(0, fi_endpoint(domain, info, &ep, nullptr));
		EXPECT_EQ(0, fi_ep_bind(ep, &av->fid, 0));
		EXPECT_EQ(0, fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV));
		EXPECT_EQ(0, fi_enable(ep));
		size_t len = sizeof(name);
		EXPECT_EQ(0, fi_getname(&ep->fid, name, &len));
	}
	~AutoNode()
	{
		fi_close(&ep->fid);
		fi_close(&cq->fid);
		fi_close(&av->fid);
		fi_close(&domain->fid);
		fi_close(&fabric->fid);
	}
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_av *av = nullptr;
	fid_cq *cq = nullptr;
	fid_ep *ep = nullptr;
	char name[64] = {};
};

fi_info *auto_progress_info()
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->domain_attr->data_progress = FI_PROGRESS_AUTO;
	hints->fabric_attr->prov_name = strdup("tcp;ofi_rxm");
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	EXPECT_EQ(0, ret) << fi_strerror(-ret);
	return ret ? nullptr : info;
}

TEST(RxmAutoProgress, OfferedWhenAsked)
{
	fi_info *info = auto_progress_info();
	ASSERT_NE(nullptr, info);
	EXPECT_EQ(FI_PROGRESS_AUTO, info->domain_attr->data_progress);
	fi_freeinfo(info);
}

// Reads a byte the progress thread may be writing, without letting the compiler keep it in a
// register. Deliberately unsynchronised (it only watches for the data's arrival), so it is
// not instrumented by ThreadSanitizer; the content is compared only after the completion
// has been read, which orders it after the provider's writes.
__attribute__((no_sanitize("thread"))) uint8_t peek(const std::vector<uint8_t> &buf, size_t i)
{
	return reinterpret_cast<const volatile uint8_t *>(buf.data())[i];
}

TEST(RxmAutoProgress, TransfersCompleteWithoutTheApplicationProgressing)
{
	fi_info *info = auto_progress_info();
	ASSERT_NE(nullptr, info);
	AutoNode a(info), b(info);
	fi_addr_t b_at_a = FI_ADDR_NOTAVAIL;
	ASSERT_EQ(1, fi_av_insert(a.av, b.name, 1, &b_at_a, 0, nullptr));
	fi_freeinfo(info);

	// An eager message and a rendezvous one (the receiver must read the sender's buffer
	// and answer before the send can complete: both sides must progress).
	for (size_t size : {size_t(64), size_t(1) << 20}) {
		SCOPED_TRACE(size);
		std::vector<uint8_t> out(size), in(size, 0);
		for (size_t i = 0; i < size; i++)
			out[i] = static_cast<uint8_t>(i * 13 + 1);
		ASSERT_EQ(0, fi_recv(b.ep, in.data(), size, nullptr, FI_ADDR_UNSPEC, &in));
		ssize_t ret;
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
		while ((ret = fi_send(a.ep, out.data(), size, nullptr, b_at_a, &out)) == -FI_EAGAIN &&
		       std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		ASSERT_EQ(0, ret);
		// No call into the library until the last byte has arrived.
		while (peek(in, size - 1) != out[size - 1] &&
		       std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(1));
		ASSERT_EQ(out[size - 1], peek(in, size - 1)) << "data never arrived";
		// Both completions are already there (queued entries are returned without
		// progressing).
		std::this_thread::sleep_for(std::chrono::milliseconds(size > 64 ? 200 : 50));
		fi_cq_entry entry{};
		deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
		while (fi_cq_read(b.cq, &entry, 1) == -FI_EAGAIN &&
		       std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		EXPECT_EQ(&in, entry.op_context);
		EXPECT_EQ(0, memcmp(out.data(), in.data(), size));
		entry = {};
		while (fi_cq_read(a.cq, &entry, 1) == -FI_EAGAIN &&
		       std::chrono::steady_clock::now() < deadline)
			std::this_thread::sleep_for(std::chrono::milliseconds(10));
		EXPECT_EQ(&out, entry.op_context);
	}
}

} // namespace
