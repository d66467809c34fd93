// RxmCntr: counters with progress on read and wait.
#include "prov/rxm/rxm_cntr.h"

#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <new>
#include <thread>

namespace rxm {

RxmCntr::RxmCntr(RxmDomain *domain, void *context)
	: FidObject(embedded_fid, FI_CLASS_CNTR, context), domain_(domain)
{
	embedded_fid.pub.fid.ops = util::ops_ptr<RxmCntr, util::make_fi_ops<RxmCntr>>();
	embedded_fid.pub.ops = util::ops_ptr<RxmCntr, util::make_cntr_ops<RxmCntr>>();
	domain_->ref();
}

int RxmCntr::open(RxmDomain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr,
		  void *context)
{
	if (!cntr)
		return -FI_EINVAL;
	if (attr) {
		if (attr->events != FI_CNTR_EVENTS_COMP || attr->flags)
			return -FI_EINVAL;
		// fi_cntr_wait polls progress; there is no wait object to hand out.
		if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
			return -FI_ENOSYS;
	}
	RxmCntr *c = new (std::nothrow) RxmCntr(domain, context);
	if (!c)
		return -FI_ENOMEM;
	*cntr = c->pub();
	return 0;
}

int RxmCntr::close()
{
	if (busy())
		return -FI_EBUSY;
	domain_->unref();
	return FidObject::close();
}

void RxmCntr::attach(RxmEndpoint *ep)
{
	std::lock_guard guard(eps_lock_);
	eps_.push_back(ep);
	ref();
}

void RxmCntr::detach(RxmEndpoint *ep)
{
	std::lock_guard guard(eps_lock_);
	auto it = std::find(eps_.begin(), eps_.end(), ep);
	if (it != eps_.end()) {
		eps_.erase(it);
		unref();
	}
}

void RxmCntr::progress()
{
	std::vector<RxmEndpoint *> eps;
	{
		std::lock_guard guard(eps_lock_);
		eps = eps_;
	}
	for (RxmEndpoint *ep : eps)
		ep->progress();
}

uint64_t RxmCntr::read()
{
	progress();
	return value_.load(std::memory_order_acquire);
}

uint64_t RxmCntr::readerr()
{
	progress();
	return errors_.load(std::memory_order_acquire);
}

int RxmCntr::add(uint64_t value)
{
	value_.fetch_add(value, std::memory_order_acq_rel);
	return 0;
}

int RxmCntr::set(uint64_t value)
{
	value_.store(value, std::memory_order_release);
	return 0;
}

int RxmCntr::adderr(uint64_t value)
{
	errors_.fetch_add(value, std::memory_order_acq_rel);
	return 0;
}

int RxmCntr::seterr(uint64_t value)
{
	errors_.store(value, std::memory_order_release);
	return 0;
}

int RxmCntr::wait(uint64_t threshold, int timeout)
{
	uint64_t errors = errors_.load(std::memory_order_acquire);
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
	for (;;) {
		progress();
		if (value_.load(std::memory_order_acquire) >= threshold)
			return 0;
		if (errors_.load(std::memory_order_acquire) != errors)
			return -FI_EAVAIL; // an operation failed while waiting
		if (timeout >= 0 && std::chrono::steady_clock::now() >= deadline)
			return -FI_ETIMEDOUT;
		std::this_thread::sleep_for(std::chrono::microseconds(20));
	}
}

} // namespace rxm
