// rxm honours the application's threading model: hints asking FI_THREAD_DOMAIN (or
// COMPLETION, ENDPOINT, FID) get that model back instead of FI_THREAD_SAFE, and a domain
// opened FI_THREAD_DOMAIN with manual progress builds rxm's util objects without locks
// (prov/util/lock.h). Messages of every protocol, plain and tagged, then still arrive: the
// locks skipped are ones the application's serialisation makes redundant.
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include "config.h"
#include "prov/util/domain.h"
#include "prov/util/fid_object.h"
#include "rxm_test_provider.h"
#include "prov/rxm/test/rxm_test_node.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

namespace {

struct InfoDeleter {
	void operator()(fi_info *info) const { fi_freeinfo(info); }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

// What rxm answers for these threading and control-progress hints (nullptr: no match).
InfoPtr rxm_info(fi_threading threading, fi_progress control = FI_PROGRESS_UNSPEC,
		 fi_progress data = FI_PROGRESS_UNSPEC)
{
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_TAGGED;
	hints->fabric_attr->prov_name = strdup(rxm_test::provider());
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = rxm_test::mr_mode();
	hints->domain_attr->threading = threading;
	hints->domain_attr->control_progress = control;
	hints->domain_attr->data_progress = data;
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), rxm_test::address(), nullptr, FI_SOURCE, hints,
			     &info);
	fi_freeinfo(hints);
	return InfoPtr(ret ? nullptr : info);
}

bool provider_available()
{
	return rxm_info(FI_THREAD_UNSPEC) != nullptr || rxm_test::provider_must_exist();
}

TEST(RxmThreading, SerialisingApplicationsGetTheirModelBack)
{
	if (!provider_available())
		GTEST_SKIP() << "no " << rxm_test::provider();
	for (fi_threading model :
	     {FI_THREAD_DOMAIN, FI_THREAD_COMPLETION, FI_THREAD_ENDPOINT, FI_THREAD_FID}) {
		InfoPtr info = rxm_info(model);
		ASSERT_TRUE(info) << model;
		for (fi_info *i = info.get(); i; i = i->next)
			EXPECT_EQ(model, i->domain_attr->threading);
	}
	// rxm runs no control-progress thread: the models util runs without locks get manual
	// control progress, unless automatic is asked for.
	EXPECT_EQ(FI_PROGRESS_MANUAL, rxm_info(FI_THREAD_DOMAIN)->domain_attr->control_progress);
	EXPECT_EQ(FI_PROGRESS_AUTO,
		  rxm_info(FI_THREAD_DOMAIN, FI_PROGRESS_AUTO)->domain_attr->control_progress);
	// Unspecified and FI_THREAD_SAFE stay as they were.
	for (fi_threading model : {FI_THREAD_UNSPEC, FI_THREAD_SAFE}) {
		InfoPtr info = rxm_info(model);
		ASSERT_TRUE(info);
		EXPECT_EQ(FI_THREAD_SAFE, info->domain_attr->threading);
		EXPECT_EQ(FI_PROGRESS_AUTO, info->domain_attr->control_progress);
	}
}

// One RDM endpoint with its own fabric, domain, AV and CQ (rxm_test_node.h).
struct Side : rxm_test::RdmNode {
	explicit Side(fi_info *info) : RdmNode(info) {}
	util::Lock::Kind lock_kind() const
	{
		auto *d = util::fid_cast<util::Domain>(&domain->fid, FI_CLASS_DOMAIN);
		return d ? d->lock_kind() : util::Lock::Kind::Mutex;
	}

	fi_addr_t peer = FI_ADDR_NOTAVAIL;
	std::vector<fi_cq_tagged_entry> done;
};

class RxmThreadDomain : public ::testing::Test {
protected:
	void SetUp() override
	{
		info_ = rxm_info(FI_THREAD_DOMAIN, FI_PROGRESS_UNSPEC, FI_PROGRESS_MANUAL);
		if (!info_ && !rxm_test::provider_must_exist())
			GTEST_SKIP() << "no " << rxm_test::provider();
		ASSERT_TRUE(info_);
		a_ = std::make_unique<Side>(info_.get());
		b_ = std::make_unique<Side>(info_.get());
		connect(*a_, *b_);
		connect(*b_, *a_);
	}

	static void connect(Side &from, Side &to)
	{
		char name[256];
		size_t len = sizeof(name);
		ASSERT_EQ(0, fi_getname(&to.ep->fid, name, &len));
		ASSERT_EQ(1, fi_av_insert(from.av, name, 1, &from.peer, 0, nullptr));
	}

	// Reads both CQs once (from one thread: the domain's serialisation).
	void poll_all()
	{
		for (Side *s : {a_.get(), b_.get()}) {
			fi_cq_tagged_entry e[4];
			ssize_t n = fi_cq_read(s->cq, e, 4);
			EXPECT_TRUE(n > 0 || n == -FI_EAGAIN) << fi_strerror(int(-n));
			for (ssize_t i = 0; i < n; i++)
				s->done.push_back(e[i]);
		}
	}

	// Polls until side has a completion for context.
	bool wait_for(Side &side, void *context, fi_cq_tagged_entry *out = nullptr)
	{
		auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
		while (std::chrono::steady_clock::now() < deadline) {
			poll_all();
			for (auto it = side.done.begin(); it != side.done.end(); ++it) {
				if (it->op_context == context) {
					if (out)
						*out = *it;
					side.done.erase(it);
					return true;
				}
			}
		}
		return false;
	}

	static std::vector<uint8_t> pattern(size_t len, uint8_t seed)
	{
		std::vector<uint8_t> v(len);
		for (size_t i = 0; i < len; i++)
			v[i] = static_cast<uint8_t>(seed + i * 13 + (i >> 10));
		return v;
	}

	InfoPtr info_;
	std::unique_ptr<Side> a_, b_;
};

TEST_F(RxmThreadDomain, DomainRunsWithoutLocks)
{
	EXPECT_EQ(FI_THREAD_DOMAIN, info_->domain_attr->threading);
	EXPECT_EQ(util::Lock::Kind::None, a_->lock_kind());
	EXPECT_EQ(util::Lock::Kind::None, b_->lock_kind());
}

// Eager, segmented and rendezvous sizes, both ways, plain and tagged.
TEST_F(RxmThreadDomain, MessagesOfEveryProtocolArrive)
{
	const size_t sizes[] = {0, 64, 4096, 16385, 100000, 1 << 20};
	fi_context ctx[4];
	for (bool tagged : {false, true}) {
		for (size_t size : sizes) {
			for (int dir = 0; dir < 2; dir++) {
				Side &tx = dir ? *b_ : *a_;
				Side &rx = dir ? *a_ : *b_;
				std::vector<uint8_t> out = pattern(size, uint8_t(size + dir));
				std::vector<uint8_t> in(size + 1, 0xee);
				uint64_t tag = 0x1234 + size;
				ssize_t r = tagged ? fi_trecv(rx.ep, in.data(), size, nullptr, rx.peer,
							      tag, 0, &ctx[0])
						   : fi_recv(rx.ep, in.data(), size, nullptr, rx.peer,
							     &ctx[0]);
				ASSERT_EQ(0, r);
				ssize_t s = tagged ? fi_tsend(tx.ep, out.data(), size, nullptr,
							      tx.peer, tag, &ctx[1])
						   : fi_send(tx.ep, out.data(), size, nullptr, tx.peer,
							     &ctx[1]);
				ASSERT_EQ(0, s);
				fi_cq_tagged_entry got{};
				ASSERT_TRUE(wait_for(rx, &ctx[0], &got)) << size;
				ASSERT_TRUE(wait_for(tx, &ctx[1])) << size;
				EXPECT_EQ(size, got.len);
				EXPECT_EQ(uint64_t(FI_RECV | (tagged ? FI_TAGGED : FI_MSG)), got.flags);
				if (tagged) {
					EXPECT_EQ(tag, got.tag);
				}
				// std::equal: out is empty at 0 bytes, and memcmp must not get its null data().
				EXPECT_TRUE(std::equal(out.begin(), out.begin() + size, in.begin())) << size;
				EXPECT_EQ(0xee, in[size]) << size;
			}
		}
	}
}

TEST_F(RxmThreadDomain, InjectAndRemoteDataArrive)
{
	fi_context ctx[2];
	uint8_t in[64] = {}, out[64];
	memset(out, 0x5a, sizeof(out));
	ASSERT_EQ(0, fi_trecv(b_->ep, in, sizeof(in), nullptr, b_->peer, 9, 0, &ctx[0]));
	ASSERT_EQ(0, fi_tinjectdata(a_->ep, out, sizeof(out), 0xfeed, a_->peer, 9));
	fi_cq_tagged_entry got{};
	ASSERT_TRUE(wait_for(*b_, &ctx[0], &got));
	EXPECT_EQ(0xfeedu, got.data);
	EXPECT_TRUE(got.flags & FI_REMOTE_CQ_DATA);
	EXPECT_EQ(0, memcmp(in, out, sizeof(out)));
	// Unexpected first: the message waits for its receive.
	ASSERT_EQ(0, fi_inject(b_->ep, out, 17, b_->peer));
	for (int i = 0; i < 1000; i++)
		poll_all();
	memset(in, 0, sizeof(in));
	ASSERT_EQ(0, fi_recv(a_->ep, in, sizeof(in), nullptr, a_->peer, &ctx[1]));
	ASSERT_TRUE(wait_for(*a_, &ctx[1], &got));
	EXPECT_EQ(17u, got.len);
	EXPECT_EQ(0, memcmp(in, out, 17));
}

// The safe default keeps util's locks.
TEST(RxmThreading, SafeDomainKeepsItsLocks)
{
	InfoPtr info = rxm_info(FI_THREAD_SAFE);
	if (!info && !rxm_test::provider_must_exist())
		GTEST_SKIP() << "no " << rxm_test::provider();
	ASSERT_TRUE(info);
	Side side(info.get());
	EXPECT_EQ(util::Lock::Kind::Mutex, side.lock_kind());
}

} // namespace
