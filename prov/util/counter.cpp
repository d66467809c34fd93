#include "prov/util/counter.h"

#include "prov/util/error.h"
#include "prov/util/wait_set.h"

namespace util {

namespace {

enum fi_wait_obj checked_wait_obj(const struct fi_cntr_attr *attr)
{
	if (!attr)
		return FI_WAIT_UNSPEC;
	if (raw_enum(attr->events) != FI_CNTR_EVENTS_COMP)
		throw Error(-FI_ENOSYS);
	switch (raw_enum(attr->wait_obj)) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD:  // blocking reads sleep in epoll instead of yielding: same contract
		return attr->wait_obj;
	case FI_WAIT_SET:
		if (!attr->wait_set)
			throw Error(-FI_EINVAL);
		return attr->wait_obj;
	default:
		throw Error(-FI_ENOSYS);
	}
}

} // namespace

Counter::Counter(Domain &domain, const struct fi_cntr_attr *attr, void *context)
    : FidObject(embedded_fid, FI_CLASS_CNTR, context), domain_(domain),
      wait_obj_(checked_wait_obj(attr)), lock_(domain.lock_kind())
{
	if (attr && attr->flags)
		throw Error(-FI_EBADFLAGS);
	// Even FI_WAIT_NONE counters get blocking support: fi_cntr_wait is commonly used
	// with default attributes, and sleeping on the domain's fds beats spinning.
	if (!wait_ok())
		throw Error(-FI_ENOMEM);
	check(add_wait_source(domain_.engine()));
	if (wait_obj_ == FI_WAIT_SET) {
		auto *set = fid_cast<WaitSet>(&attr->wait_set->fid, FI_CLASS_WAIT);
		if (!set)
			throw Error(-FI_EINVAL);
		check(set->add(this));
		wait_set_ = attr->wait_set;
	}
	embedded_fid.pub.fid.ops = ops_ptr<Counter, make_fi_ops<Counter>>();
	embedded_fid.pub.ops = ops_ptr<Counter, make_cntr_ops<Counter>>();
	domain_.ref();
}

Counter::~Counter()
{
	if (wait_set_) {
		if (auto *set = fid_cast<WaitSet>(&wait_set_->fid, FI_CLASS_WAIT))
			set->remove(this);
	}
	domain_.unref();
}

int Counter::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

void Counter::changed()
{
	LockGuard guard(lock_);
	note_event_added();
}

void Counter::increment(uint64_t n)
{
	value_.fetch_add(n);
	changed();
}

void Counter::increment_error(uint64_t n)
{
	errors_.fetch_add(n);
	changed();
}

uint64_t Counter::read()
{
	run_progress();
	LockGuard guard(lock_);
	seen_value_ = value_.load();
	seen_errors_ = errors_.load();
	note_drained();
	return seen_value_;
}

bool Counter::take_change()
{
	LockGuard guard(lock_);
	uint64_t value = value_.load();
	uint64_t errors = errors_.load();
	bool changed = value != seen_value_ || errors != seen_errors_;
	seen_value_ = value;
	seen_errors_ = errors;
	note_drained();
	return changed;
}

uint64_t Counter::readerr()
{
	run_progress();
	return errors_.load();
}

int Counter::add(uint64_t value)
{
	increment(value);
	return 0;
}

int Counter::set(uint64_t value)
{
	value_.store(value);
	changed();
	return 0;
}

int Counter::adderr(uint64_t value)
{
	increment_error(value);
	return 0;
}

int Counter::seterr(uint64_t value)
{
	errors_.store(value);
	changed();
	return 0;
}

int Counter::wait(uint64_t threshold, int timeout)
{
	const uint64_t errors_at_start = errors_.load();
	const bool infinite = timeout < 0;
	const auto deadline = deadline_after(timeout);
	for (;;) {
		run_progress();
		if (value_.load() >= threshold)
			return 0;
		if (errors_.load() != errors_at_start)
			return -FI_EAVAIL;
		lock_.lock();
		begin_wait();
		// Consume the wakeup state, then re-check so an increment in between is seen.
		note_drained();
		bool done = value_.load() >= threshold || errors_.load() != errors_at_start;
		lock_.unlock();
		if (done) {
			end_wait();
			continue;
		}
		int rc = block_until(deadline, infinite);
		end_wait();
		if (rc == -FI_EAGAIN) {
			take_interrupt();
			run_progress();
			if (value_.load() >= threshold)
				return 0;
			return errors_.load() != errors_at_start ? -FI_EAVAIL : -FI_ETIMEDOUT;
		}
		if (rc < 0)
			return rc;
	}
}

int Counter::control(int command, void *arg)
{
	LockGuard guard(lock_);
	return wait_control(command, arg, wait_obj_);
}

void Counter::run_progress()
{
	domain_.progress();
}

bool Counter::has_events()
{
	LockGuard guard(lock_);
	return value_.load() != seen_value_ || errors_.load() != seen_errors_;
}

} // namespace util
