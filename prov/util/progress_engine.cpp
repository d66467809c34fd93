#include "prov/util/progress_engine.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cerrno>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace util {

namespace {

// epoll_event.data of the stop eventfd (registrations carry their Registration*).
void *const kStopTag = reinterpret_cast<void *>(uintptr_t{1});
// ...and of the lease timer of fds out of the set (leave_epoll).
void *const kLeaseTag = reinterpret_cast<void *>(uintptr_t{2});

// Enough ready fds per pass; the rest are reported by the next pass (level-triggered).
constexpr int kEventsPerPass = 64;

} // namespace

ProgressEngine::ProgressEngine(Lock::Kind lock_kind) : lock_(lock_kind)
{
	epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
	sleep_report::take(epoll_fd_); // left by an engine that had this fd before
}

ProgressEngine::~ProgressEngine()
{
	stop_thread();
	if (epoll_fd_ >= 0)
		::close(epoll_fd_);
	if (leaf_fd_ >= 0)
		::close(leaf_fd_);
	if (lease_fd_ >= 0)
		::close(lease_fd_);
}

int ProgressEngine::add_fd(int fd, uint32_t events, FdHandler *handler)
{
	return add_registration(fd, events, handler, false);
}

int ProgressEngine::add_nested_engine(int fd, FdHandler *handler)
{
	return add_registration(fd, EPOLLIN, handler, true);
}

int ProgressEngine::add_registration(int fd, uint32_t events, FdHandler *handler, bool nested)
{
	if (fd < 0 || !valid())
		return -FI_EINVAL;
	LockGuard guard(lock_);
	if (registrations_.count(fd))
		return -FI_EALREADY;
	auto registration =
		std::make_unique<Registration>(Registration{fd, handler, events, nested});
	epoll_event ev{};
	ev.events = events;
	ev.data.ptr = registration.get();
	if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev))
		return errno == EEXIST ? -FI_EALREADY : -errno;
	mirror(EPOLL_CTL_ADD, *registration);
	if (nested)
		nested_count_.fetch_add(1);
	++eager_count_;
	registrations_.emplace(fd, std::move(registration));
	return 0;
}

void ProgressEngine::mirror(int op, const Registration &registration)
{
	if (leaf_fd_ < 0 || registration.nested)
		return;
	// Only readiness matters there (nobody dispatches from it).
	epoll_event ev{};
	ev.events = registration.events;
	ev.data.fd = registration.fd;
	epoll_ctl(leaf_fd_, op, registration.fd, op == EPOLL_CTL_DEL ? nullptr : &ev);
}

int ProgressEngine::leaf_fd()
{
	if (!valid())
		return -FI_EINVAL;
	LockGuard guard(lock_);
	if (leaf_fd_ >= 0)
		return leaf_fd_;
	leaf_fd_ = epoll_create1(EPOLL_CLOEXEC);
	if (leaf_fd_ < 0)
		return -errno;
	for (auto &[fd, registration] : registrations_)
		mirror(EPOLL_CTL_ADD, *registration);
	return leaf_fd_;
}

int ProgressEngine::modify_fd(int fd, uint32_t events, FdHandler *handler)
{
	if (fd < 0 || !valid())
		return -FI_EINVAL;
	LockGuard guard(lock_);
	auto it = registrations_.find(fd);
	if (it == registrations_.end())
		return -FI_ENOENT;
	rejoin_epoll(it->second.get()); // (MOD needs it in the set)
	it->second->handler = handler;
	it->second->events = events;
	if (!(events & EPOLLIN))
		cool(it->second.get()); // a paused reader is not polled behind epoll's back
	epoll_event ev{};
	ev.events = events;
	ev.data.ptr = it->second.get();
	if (epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &ev))
		return -errno;
	mirror(EPOLL_CTL_MOD, *it->second);
	return 0;
}

int ProgressEngine::remove_fd(int fd)
{
	if (fd < 0 || !valid())
		return -FI_EINVAL;
	// Under the lock, so a pass in another thread is not dispatching to a handler that the
	// caller is about to destroy.
	LockGuard guard(lock_);
	auto it = registrations_.find(fd);
	if (it == registrations_.end())
		return -FI_ENOENT;
	if (it->second->out_of_epoll) {
		it->second->out_of_epoll = false; // (and not put back by cool below)
		--out_count_;
	} else {
		epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
		mirror(EPOLL_CTL_DEL, *it->second);
	}
	if (it->second->nested)
		nested_count_.fetch_sub(1);
	if (!it->second->lazy)
		--eager_count_;
	cool(it->second.get());
	// A pass in progress on this thread may still hold the pointer in its event array.
	it->second->handler = nullptr;
	if (depth_ > 0)
		retired_.push_back(std::move(it->second));
	registrations_.erase(it);
	return 0;
}

int ProgressEngine::set_lazy(int fd, bool lazy)
{
	LockGuard guard(lock_);
	auto it = registrations_.find(fd);
	if (it == registrations_.end())
		return -FI_ENOENT;
	Registration &registration = *it->second;
	// A nested engine stands for fds that may not be lazy: it is always looked at.
	if (registration.nested || registration.lazy == lazy)
		return 0;
	registration.lazy = lazy;
	if (lazy) {
		--eager_count_;
		cool(&registration); // a lazy fd is not read on every pass either
	} else {
		++eager_count_;
	}
	return 0;
}

int ProgressEngine::add_source(ProgressSource *source)
{
	if (!source)
		return -FI_EINVAL;
	LockGuard guard(lock_);
	if (std::find(sources_.begin(), sources_.end(), source) != sources_.end())
		return -FI_EALREADY;
	sources_.push_back(source);
	source_count_ = sources_.size();
	return 0;
}

void ProgressEngine::remove_source(ProgressSource *source)
{
	LockGuard guard(lock_);
	sources_.erase(std::remove(sources_.begin(), sources_.end(), source), sources_.end());
	source_count_ = sources_.size();
}

void ProgressEngine::progress()
{
	LockGuard guard(lock_);
	++passes_;
	sleep_prepared_ = false;
	// The usual pass of a busy poller over lazy fds only (shm's doorbell and socket, a
	// quiet tcp connection; a lazy fd is never hot): no rest to take, epoll not due. What
	// the full path below does for it, in a few loads: count the lazy pass, nothing was
	// busy, epoll was not asked. An engine with an eager fd pays one test for it.
	if (eager_count_ == 0 && !rest_ && lazy_passes_ + 1 < kLazyEpollEvery &&
	    !epoll_requested_.load(std::memory_order_relaxed) && !keep_armed()) {
		++lazy_passes_;
		hot_was_busy_ = false;
		probed_quiet_ = false;
	} else if (valid()) {
		++depth_;
		bool rest = rest_ && std::chrono::steady_clock::now() - busy_at_ < rest_window_;
		rest_ = false;
		if (rest) {
			// The pass right after a busy one (see progress() in the header): no read,
			// no epoll_wait; the next pass asks epoll (hot_was_busy_ is still set).
			probed_quiet_ = false;
		} else {
			if (out_count_ && keep_armed())
				rejoin_all(); // an fd polled without fi_trywait: see keep_armed()
			bool busy = hot_count_ && poll_hot();
			bool asked = epoll_due(busy);
			if (asked && nested_count_.load(std::memory_order_relaxed) > 0 &&
			    sleepers_saw_quiet())
				asked = false;
			if (asked)
				dispatch_epoll(); // sets probed_quiet_ from what epoll reported
			if (!asked || busy)
				probed_quiet_ = false;
			if (busy) {
				rest_ = true;
				busy_at_ = std::chrono::steady_clock::now();
			}
		}
		if (--depth_ == 0 && !retired_.empty())
			retired_.clear();
	}
	// Index loop: a source may remove itself (or others) while running.
	for (size_t i = 0; i < sources_.size(); ++i)
		sources_[i]->progress();
}

inline bool ProgressEngine::epoll_due(bool busy)
{
	bool requested = epoll_requested_.load(std::memory_order_relaxed) &&
			 epoll_requested_.exchange(false);
	// Only lazy fds: their sources look at memory on every pass, the rest may wait; unless
	// an fd polled without fi_trywait needs the doorbells drained (keep_armed()).
	if (eager_count_ == 0 && !keep_armed()) {
		hot_was_busy_ = busy;
		if (!requested && ++lazy_passes_ < kLazyEpollEvery)
			return false;
		lazy_passes_ = 0;
		return true;
	}
	// After the polls: a handler that declined (or a stream that closed) leaves no hot
	// fd, and then epoll is asked on this very pass. A pass whose hot fd had data leaves
	// epoll to the next pass (which asks it in any case), so the completion reaches its
	// reader first.
	bool due = hot_count_ == 0 || hot_was_busy_ || (++pass_ % kEpollEvery == 0 && !busy);
	hot_was_busy_ = busy;
	return due || requested;
}

bool ProgressEngine::sleepers_saw_quiet()
{
	if (sleep_report::peek(leaf_fd_) != sleep_report::quiet)
		return false;
	for (auto &[fd, registration] : registrations_)
		if (registration->nested && sleep_report::peek(fd) != sleep_report::quiet)
			return false;
	return sleep_report::take(leaf_fd_) == sleep_report::quiet;
}

bool ProgressEngine::prepare_sleep()
{
	LockGuard guard(lock_);
	bool sleep = true;
	sleep_report::Report report = sleep_report::none;
	if (valid()) {
		++depth_;
		lazy_passes_ = 0;
		// A pass that has just asked epoll and found nothing is as good as asking again:
		// whatever became ready since wakes the sleeper's poll at once, and the pass after
		// it dispatches. A blocking read then costs one epoll_wait per engine, not two.
		// So is a sleeper's word that fd() was quiet when it woke, or fired for what a
		// source drained itself (sleep_report.h): a blocking read then costs no probe.
		report = sleep_report::peek(epoll_fd_);
		// An fd back in the set may hold what the passes while it was out did not read.
		busy_since_sleep_ = 0;
		bool rejoined = out_count_ && rejoin_all();
		bool known_quiet = !rejoined && (probed_quiet_ || report == sleep_report::quiet);
		if (!known_quiet && dispatch_epoll() > 0)
			sleep = false;
		if (--depth_ == 0)
			retired_.clear();
	}
	// Index loop, as in progress(): a source may remove itself.
	for (size_t i = 0; sleep && i < sources_.size(); ++i)
		sleep = sources_[i]->before_sleep();
	// The report holds until a sleep may follow (whoever sleeps next reports anew, or
	// nobody does: an application polling its fd); a veto leaves it for the next try.
	if (sleep && report != sleep_report::none)
		sleep_report::take(epoll_fd_);
	sleep_prepared_ = sleep;
	return sleep;
}

int ProgressEngine::dispatch_epoll()
{
	epoll_event events[kEventsPerPass];
	int n = epoll_wait(epoll_fd_, events, kEventsPerPass, 0);
	probed_quiet_ = n == 0;
	int dispatched = 0;
	for (int i = 0; i < n; ++i) {
		if (events[i].data.ptr == kStopTag)
			continue;
		if (events[i].data.ptr == kLeaseTag) {
			uint64_t expirations;
			[[maybe_unused]] ssize_t rc = ::read(lease_fd_, &expirations, sizeof(expirations));
			rejoin_all();
			continue;
		}
		auto *registration = static_cast<Registration *>(events[i].data.ptr);
		if (!registration->handler)
			continue;
		++dispatched;
		registration->handler->on_fd_ready(registration->fd, events[i].events);
		// The handler may have removed it (then its handler is null).
		if ((events[i].events & EPOLLIN) && registration->handler &&
		    !registration->no_poll && !registration->lazy &&
		    (registration->events & EPOLLIN))
			make_hot(registration);
	}
	return dispatched;
}

bool ProgressEngine::poll_hot()
{
	bool busy = false;
	// Index loop over a copy: a handler may remove registrations (cooling them).
	Registration *hot[kHotFds];
	size_t count = hot_count_;
	std::copy(hot_, hot_ + count, hot);
	for (size_t i = 0; i < count; ++i) {
		Registration *registration = hot[i];
		// Cooled (or removed) by an earlier handler of this pass.
		if (std::find(hot_, hot_ + hot_count_, registration) == hot_ + hot_count_ ||
		    !registration->handler)
			continue;
		switch (registration->handler->poll_fd(registration->fd)) {
		case FdHandler::Poll::busy:
			registration->idle_polls = 0;
			busy = true;
			if (busy_since_sleep_ >= kLeaveEpollAfter && !registration->out_of_epoll)
				maybe_leave_epoll(registration);
			break;
		case FdHandler::Poll::idle:
			if (++registration->idle_polls >= kHotIdlePasses)
				cool(registration);
			break;
		case FdHandler::Poll::declined:
			registration->no_poll = true;
			cool(registration);
			break;
		}
	}
	if (busy && busy_since_sleep_ < kLeaveEpollAfter)
		++busy_since_sleep_;
	return busy;
}

void ProgressEngine::maybe_leave_epoll(Registration *registration)
{
	// Only a plain reader whose handler's poll_fd sees all that epoll would report, and
	// not while an application may poll fd() without fi_trywait (no prepare_sleep).
	if (registration->lazy || registration->nested || registration->events != EPOLLIN ||
	    !registration->handler || !registration->handler->may_leave_epoll() || keep_armed())
		return;
	if (lease_fd_ < 0) {
		lease_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
		if (lease_fd_ < 0)
			return;
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.ptr = kLeaseTag;
		if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, lease_fd_, &ev)) {
			::close(lease_fd_);
			lease_fd_ = -1;
			return;
		}
	}
	if (out_count_ == 0) {
		// One shot: whatever leaves while it runs rejoins with the first (sooner).
		itimerspec lease{};
		lease.it_value.tv_nsec = long{kLeaseMs} * 1000000;
		if (timerfd_settime(lease_fd_, 0, &lease, nullptr))
			return;
	}
	if (epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, registration->fd, nullptr))
		return;
	mirror(EPOLL_CTL_DEL, *registration);
	registration->out_of_epoll = true;
	++out_count_;
}

void ProgressEngine::rejoin_epoll(Registration *registration)
{
	if (!registration->out_of_epoll)
		return;
	registration->out_of_epoll = false;
	--out_count_;
	epoll_event ev{};
	ev.events = registration->events;
	ev.data.ptr = registration;
	epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, registration->fd, &ev);
	mirror(EPOLL_CTL_ADD, *registration);
}

bool ProgressEngine::rejoin_all()
{
	// Only hot fds leave; the hot list holds every one that is out.
	bool any = out_count_ > 0;
	for (size_t i = 0; i < hot_count_ && out_count_; ++i)
		rejoin_epoll(hot_[i]);
	busy_since_sleep_ = 0; // (they leave again after as many busy passes)
	return any;
}

void ProgressEngine::make_hot(Registration *registration)
{
	registration->idle_polls = 0;
	Registration **end = hot_ + hot_count_;
	Registration **at = std::find(hot_, end, registration);
	if (at == end) {
		// New: the least recently reported one gives way when all slots are taken.
		if (hot_count_ < kHotFds)
			++hot_count_;
		at = hot_ + hot_count_ - 1;
		if (at != end)
			rejoin_epoll(*at); // the evicted one is no longer polled
	}
	// Most recent first.
	std::move_backward(hot_, at, at + 1);
	hot_[0] = registration;
}

void ProgressEngine::cool(Registration *registration)
{
	Registration **end = hot_ + hot_count_;
	Registration **at = std::find(hot_, end, registration);
	if (at == end)
		return;
	rejoin_epoll(registration);
	std::move(at + 1, end, at);
	--hot_count_;
}

int ProgressEngine::wait(int timeout_ms)
{
	if (!valid())
		return -FI_EINVAL;
	if (timeout_ms != 0) {
		LockGuard guard(lock_);
		rejoin_all(); // a sleeper is woken by every fd
	}
	epoll_event event;
	int n = epoll_wait(epoll_fd_, &event, 1, timeout_ms < 0 ? -1 : timeout_ms);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return n > 0 ? 1 : 0;
}

int ProgressEngine::start_thread(int interval_ms)
{
	if (thread_.joinable())
		return 0;
	if (!valid())
		return -FI_EINVAL;
	stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd_ < 0)
		return -errno;
	epoll_event ev{};
	ev.events = EPOLLIN;
	ev.data.ptr = kStopTag;
	if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, stop_fd_, &ev)) {
		int err = -errno;
		::close(stop_fd_);
		stop_fd_ = -1;
		return err;
	}
	stopping_ = false;
	try {
		thread_ = std::thread([this, interval_ms] { thread_main(interval_ms); });
	} catch (...) {
		epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, stop_fd_, nullptr);
		::close(stop_fd_);
		stop_fd_ = -1;
		return -FI_ENOMEM;
	}
	return 0;
}

void ProgressEngine::stop_thread()
{
	if (!thread_.joinable())
		return;
	stopping_ = true;
	uint64_t one = 1;
	[[maybe_unused]] ssize_t rc = ::write(stop_fd_, &one, sizeof(one));
	thread_.join();
	epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, stop_fd_, nullptr);
	::close(stop_fd_);
	stop_fd_ = -1;
}

void ProgressEngine::thread_main(int interval_ms)
{
	while (!stopping_) {
		// Sleep until an fd is ready (the stop eventfd included), then run a pass. Sources
		// arm their wake-ups first, and veto the sleep when work came meanwhile.
		epoll_event event;
		if (prepare_sleep())
			epoll_wait(epoll_fd_, &event, 1, interval_ms > 0 ? interval_ms : -1);
		if (stopping_)
			break;
		progress();
	}
}

} // namespace util
