// RxmCntr: counters with progress on read and wait.
#include "prov/rxm/rxm_cntr.h"

#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/util/error.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <chrono>
#include <new>

namespace rxm {

RxmCntr::RxmCntr(RxmDomain *domain, enum fi_wait_obj wait_obj, void *context)
	: FidObject(embedded_fid, FI_CLASS_CNTR, context), domain_(domain), wait_obj_(wait_obj)
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
		if (util::raw_enum(attr->events) != FI_CNTR_EVENTS_COMP || attr->flags)
			return -FI_EINVAL;
		const unsigned wait_obj = util::raw_enum(attr->wait_obj);
		if (wait_obj != FI_WAIT_NONE && wait_obj != FI_WAIT_UNSPEC && wait_obj != FI_WAIT_FD)
			return -FI_ENOSYS;
	}
	RxmCntr *c = new (std::nothrow)
		RxmCntr(domain, attr ? attr->wait_obj : FI_WAIT_UNSPEC, context);
	if (!c)
		return -FI_ENOMEM;
	if (!c->wait_ok()) {
		c->close();
		return -FI_ENOMEM;
	}
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
	add_bound_ep(ep);
	ref();
}

void RxmCntr::detach(RxmEndpoint *ep)
{
	if (remove_bound_ep(ep))
		unref();
}

void RxmCntr::progress()
{
	for_each_bound_ep([](RxmEndpoint *ep) { ep->progress(); });
}

void RxmCntr::changed()
{
	std::lock_guard guard(event_lock_);
	changed_.store(true, std::memory_order_release);
	note_event_added();
}

void RxmCntr::seen()
{
	if (!changed_.load(std::memory_order_acquire))
		return;
	std::lock_guard guard(event_lock_);
	changed_.store(false, std::memory_order_release);
	note_drained();
}

uint64_t RxmCntr::read()
{
	progress();
	seen();
	return value_.load(std::memory_order_acquire);
}

uint64_t RxmCntr::readerr()
{
	progress();
	seen();
	return errors_.load(std::memory_order_acquire);
}

int RxmCntr::add(uint64_t value)
{
	value_.fetch_add(value, std::memory_order_acq_rel);
	changed();
	return 0;
}

int RxmCntr::set(uint64_t value)
{
	value_.store(value, std::memory_order_release);
	changed();
	return 0;
}

int RxmCntr::adderr(uint64_t value)
{
	errors_.fetch_add(value, std::memory_order_acq_rel);
	changed();
	return 0;
}

int RxmCntr::seterr(uint64_t value)
{
	errors_.store(value, std::memory_order_release);
	changed();
	return 0;
}

int RxmCntr::wait(uint64_t threshold, int timeout)
{
	uint64_t errors = errors_.load(std::memory_order_acquire);
	bool infinite = timeout < 0;
	Clock::time_point deadline = deadline_after(timeout);
	for (;;) {
		begin_wait();  // from here on, changes set the eventfd
		seen();        // forget changes we are about to look at
		progress();
		if (value_.load(std::memory_order_acquire) >= threshold) {
			end_wait();
			return 0;
		}
		if (errors_.load(std::memory_order_acquire) != errors) {
			end_wait();
			return -FI_EAVAIL; // an operation failed while waiting
		}
		int rc = block_polled(deadline, infinite);
		end_wait();
		if (rc == -FI_EAGAIN) {
			take_interrupt();
			if (!infinite && Clock::now() >= deadline) {
				progress();
				return value_.load(std::memory_order_acquire) >= threshold
					       ? 0
					       : -FI_ETIMEDOUT;
			}
			continue;
		}
		if (rc < 0)
			return rc;
	}
}

int RxmCntr::control(int command, void *arg)
{
	return rxm_wait_control(command, arg, wait_obj_);
}

int RxmCntr::trywait_all()
{
	progress();
	if (has_events())
		return -FI_EAGAIN;
	int rc = cores_trywait(bound_eps());
	if (rc)
		return rc;
	return has_events() ? -FI_EAGAIN : 0;
}

bool RxmCntr::cores_quiet()
{
	return cores_may_sleep(bound_eps());
}

} // namespace rxm
