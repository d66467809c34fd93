// A tiny provider built on prov/util, used by the unit tests to open real objects through
// the public fi_* calls.
#ifndef OFI_PROV_UTIL_TEST_FAKE_PROVIDER_H
#define OFI_PROV_UTIL_TEST_FAKE_PROVIDER_H

#include "prov/util/completion_queue.h"
#include "prov/util/counter.h"
#include "prov/util/domain.h"
#include "prov/util/endpoint.h"
#include "prov/util/event_queue.h"
#include "prov/util/fabric.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_tagged.h>

#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>

namespace fake {

extern struct fi_provider provider;

class FakeEndpoint : public util::Endpoint {
public:
	FakeEndpoint(util::Domain &domain, const struct fi_info *info, void *context)
	    : Endpoint(domain, info, context)
	{
		install_ops<FakeEndpoint>();
	}

	// "Sends" complete immediately; a zero-length buffer pointer makes it fail.
	ssize_t send(const void *buf, size_t len, void *, fi_addr_t, void *context)
	{
		util::LockGuard guard(domain().lock());
		if (!buf)
			throw util::Error(-FI_EINVAL);
		complete_tx(tx_op_flags(), context, FI_SEND | FI_MSG, len);
		return 0;
	}
	ssize_t sendmsg(const struct fi_msg *msg, uint64_t flags)
	{
		util::LockGuard guard(domain().lock());
		complete_tx(flags, msg->context, FI_SEND | FI_MSG, 0);
		return 0;
	}
	// Members used to exercise exception conversion.
	ssize_t inject(const void *, size_t, fi_addr_t) { throw std::bad_alloc(); }
	ssize_t senddata(const void *, size_t, void *, uint64_t, fi_addr_t, void *)
	{
		throw std::runtime_error("boom");
	}
	ssize_t tsend(const void *, size_t len, void *, fi_addr_t, uint64_t tag, void *context)
	{
		util::LockGuard guard(domain().lock());
		complete_tx(tx_op_flags(), context, FI_SEND | FI_TAGGED, len, 0, tag);
		return 0;
	}
};

class FakeDomain : public util::Domain {
public:
	FakeDomain(util::Fabric &fabric, const struct fi_info *info, void *context)
	    : Domain(fabric, info, context)
	{
		install_ops<FakeDomain>();
	}
	int endpoint(struct fi_info *info, struct fid_ep **ep, void *context)
	{
		auto object = std::make_unique<FakeEndpoint>(*this, info, context);
		*ep = object.release()->ep_fid();
		return 0;
	}
};

class FakeFabric : public util::Fabric {
public:
	FakeFabric(const struct fi_fabric_attr *attr, void *context)
	    : Fabric(&fake::provider, attr, context)
	{
		install_ops<FakeFabric>();
	}
	int domain(struct fi_info *info, struct fid_domain **dom, void *context)
	{
		auto object = std::make_unique<FakeDomain>(*this, info, context);
		*dom = object.release()->domain_fid();
		return 0;
	}
};

// Opens fabric + domain (+ optionally an endpoint) for a test and closes them after.
class Fixture : public ::testing::Test {
protected:
	void SetUp() override { open(FI_VERSION(1, 17), FI_THREAD_SAFE, FI_PROGRESS_MANUAL); }
	void TearDown() override { close_all(); }

	void open(uint32_t api_version, enum fi_threading threading, enum fi_progress progress);
	void close_all();
	struct fid_cq *open_cq(enum fi_cq_format format, size_t size = 0,
			       enum fi_wait_obj wait = FI_WAIT_UNSPEC);
	struct fid_ep *open_ep();

	struct fi_info *info = nullptr;
	struct fid_fabric *fabric = nullptr;
	struct fid_domain *domain = nullptr;
	util::Domain *domain_object = nullptr;
};

} // namespace fake

#endif
