#include "prov/util/waitable.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cerrno>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace util {

template <class Fn>
void Waitable::for_each_engine(Fn fn)
{
	std::lock_guard guard(polled_lock_);
	for (const Source &source : sources_)
		if (source.engine)
			fn(*source.engine);
}

Waitable::Waitable()
{
	event_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
	if (event_fd_ >= 0 && epoll_fd_ >= 0) {
		epoll_event ev{};
		ev.events = EPOLLIN;
		ev.data.fd = event_fd_;
		epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, event_fd_, &ev);
	}
}

Waitable::~Waitable()
{
	if (engines_told_export_)
		for_each_engine([](ProgressEngine &engine) { engine.note_wait_fd_released(); });
	if (epoll_fd_ >= 0)
		::close(epoll_fd_);
	if (event_fd_ >= 0)
		::close(event_fd_);
}

int Waitable::trywait()
{
	// The fd's holder follows fi_trywait(3): the engines may leave their sources disarmed
	// while nobody sleeps (ProgressEngine::keep_armed). Once is enough.
	if (!engines_told_trywait_.load(std::memory_order_relaxed)) {
		engines_told_trywait_ = true;
		for_each_engine([](ProgressEngine &engine) { engine.note_trywait(); });
	}
	if (has_events())
		return -FI_EAGAIN;
	// The caller is about to sleep: sources that need a wake-up ask for it now (and say
	// whether work is already there, which a read must pick up first).
	if (!prepare_engines() || has_events())
		return -FI_EAGAIN;
	uses_trywait_ = true;
	// The holder follows fi_trywait after all: the wake-up given at export is not due.
	if (export_wake_pending_.exchange(false) && event_fd_set_.load() && !interrupted_.load() &&
	    !has_events())
		clear_event_fd();
	armed_ = true;
	// An event added between the check and arming must still be seen by the sleeper.
	if (has_events() && exported_.load())
		set_event_fd();
	return 0;
}

int Waitable::export_wait_fd()
{
	if (!wait_ok())
		return -FI_ENOSYS;
	export_polled_fds();
	exported_ = true;
	// Its holder may poll it without ever calling fi_trywait: until it does, the engines
	// keep their sources armed after every pass (ProgressEngine::keep_armed). No pass armed
	// them yet: one wake-up makes the holder read (and so progress) before its first sleep.
	if (!engines_told_export_.exchange(true)) {
		bool unarmed = false;
		for_each_engine([&unarmed](ProgressEngine &engine) {
			engine.note_wait_fd_exported();
			unarmed = unarmed || engine.keep_armed();
		});
		if (unarmed) {
			export_wake_pending_ = true;
			set_event_fd();
		}
	}
	// From now on the eventfd must mirror "has events"; catch up with the present.
	if (has_events())
		set_event_fd();
	return epoll_fd_;
}

int Waitable::wait_control(int command, void *arg, enum fi_wait_obj wait_obj)
{
	switch (command) {
	case FI_GETWAIT: {
		if (!arg)
			return -FI_EINVAL;
		if (wait_obj != FI_WAIT_FD && wait_obj != FI_WAIT_UNSPEC)
			return -FI_ENODATA;
		int fd = export_wait_fd();
		if (fd < 0)
			return fd;
		*static_cast<int *>(arg) = fd;
		return 0;
	}
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*static_cast<enum fi_wait_obj *>(arg) =
			wait_obj == FI_WAIT_UNSPEC ? FI_WAIT_FD : wait_obj;
		return 0;
	case kGetWaitSources:
		if (!arg)
			return -FI_EINVAL;
		if (wait_obj != FI_WAIT_FD && wait_obj != FI_WAIT_UNSPEC)
			return -FI_ENOSYS;
		return export_wait_sources(static_cast<WaitSources *>(arg));
	default:
		return -FI_ENOSYS;
	}
}

void Waitable::set_observed_by_wait_set(bool on)
{
	// The wait set sleeps on our epoll fd alone: it must hold the polled fds too.
	if (on)
		export_polled_fds();
	in_wait_set_ = on;
	if (on && has_events())
		set_event_fd();
}

int Waitable::epoll_add(int fd)
{
	if (!wait_ok() || fd < 0)
		return -FI_EINVAL;
	epoll_event ev{};
	ev.events = EPOLLIN;
	ev.data.fd = fd;
	if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) && errno != EEXIST)
		return -errno;
	return 0;
}

void Waitable::epoll_del(int fd)
{
	if (wait_ok() && fd >= 0)
		epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

int Waitable::add_wait_source(int fd)
{
	std::lock_guard guard(polled_lock_);
	if (sources_exported_)
		return -FI_EBUSY;
	int rc = epoll_add(fd);
	if (rc == 0)
		sources_.push_back({fd, nullptr});
	return rc;
}

int Waitable::add_wait_source(ProgressEngine &engine)
{
	std::lock_guard guard(polled_lock_);
	if (sources_exported_)
		return -FI_EBUSY;
	// prepare_engines() copies them into an array of this size.
	if (std::count_if(sources_.begin(), sources_.end(),
			  [](const Source &source) { return source.engine != nullptr; }) >=
	    static_cast<long>(WaitSources::kMax))
		return -FI_ENOSPC;
	int rc = epoll_add(engine.fd());
	if (rc == 0) {
		sources_.push_back({engine.fd(), &engine});
		if (engines_told_export_)
			engine.note_wait_fd_exported();
		if (engines_told_trywait_)
			engine.note_trywait();
	}
	return rc;
}

void Waitable::remove_wait_source(int fd)
{
	std::lock_guard guard(polled_lock_);
	auto it = std::find_if(sources_.begin(), sources_.end(),
			       [fd](const Source &source) { return source.fd == fd; });
	if (it != sources_.end()) {
		if (it->engine && engines_told_export_)
			it->engine->note_wait_fd_released();
		sources_.erase(it);
	}
	epoll_del(fd);
}

int Waitable::export_wait_sources(WaitSources *out)
{
	if (!wait_ok())
		return -FI_ENOSYS;
	{
		std::lock_guard guard(polled_lock_);
		// Polled fds and fd-less sources need our own sleeping logic; one slot is the eventfd.
		if (!polled_fds_.empty() || fdless_sources_.load() > 0 ||
		    sources_.size() + 1 > WaitSources::kMax)
			return -FI_ENOSYS;
		out->count = 0;
		out->fds[out->count++] = event_fd_;
		for (const Source &source : sources_) {
			int fd = source.fd;
			if (source.engine && source.engine->has_nested_engines())
				fd = source.engine->leaf_fd();
			if (fd < 0)
				return -FI_ENOSYS;
			out->fds[out->count++] = fd;
		}
		sources_exported_ = true;
	}
	// Observed from now on, but only while a trywait armed it: no eventfd write for the
	// completions the holder reads while busy.
	uses_trywait_ = true;
	exported_ = true;
	return 0;
}

int Waitable::add_polled_fd(int fd)
{
	if (!wait_ok() || fd < 0)
		return -FI_EINVAL;
	std::lock_guard guard(polled_lock_);
	if (polled_exported_) {
		int rc = epoll_add(fd);
		if (rc)
			return rc;
	}
	polled_fds_.push_back(fd);
	polled_count_ = polled_fds_.size();
	return 0;
}

void Waitable::remove_polled_fd(int fd)
{
	std::lock_guard guard(polled_lock_);
	auto it = std::find(polled_fds_.begin(), polled_fds_.end(), fd);
	if (it == polled_fds_.end())
		return;
	polled_fds_.erase(it);
	polled_count_ = polled_fds_.size();
	// Added twice, removed once: it stays watched.
	if (polled_exported_ &&
	    std::find(polled_fds_.begin(), polled_fds_.end(), fd) == polled_fds_.end())
		epoll_del(fd);
}

void Waitable::export_polled_fds()
{
	std::lock_guard guard(polled_lock_);
	if (polled_exported_)
		return;
	polled_exported_ = true;
	for (int fd : polled_fds_)
		epoll_add(fd);
}

void Waitable::snapshot_polled(SleepFds &out)
{
	out.count = 0;
	if (polled_count_.load() == 0)
		return;
	std::lock_guard guard(polled_lock_);
	if (polled_exported_ || polled_fds_.empty())
		return;  // the epoll set holds them
	size_t n = polled_fds_.size() + 1;
	if (n > SleepFds::kFew) {
		out.many.resize(n);  // only past kFew polled fds: a blocking call, not the data path
		out.fds = out.many.data();
	}
	for (size_t i = 0; i + 1 < n; ++i)
		out.fds[i] = {polled_fds_[i], POLLIN, 0};
	out.fds[n - 1] = {epoll_fd_, POLLIN, 0};
	out.count = n;
}

void Waitable::interrupt()
{
	interrupted_ = true;
	uint64_t one = 1;
	if (event_fd_ >= 0 && ::write(event_fd_, &one, sizeof(one)) == sizeof(one))
		event_fd_set_ = true;  // cleared by the next drain once the interrupt is consumed
}

void Waitable::note_drained()
{
	if (event_fd_set_)
		clear_event_fd();
}

void Waitable::set_event_fd()
{
	uint64_t one = 1;
	if (event_fd_ >= 0 && ::write(event_fd_, &one, sizeof(one)) == sizeof(one))
		event_fd_set_ = true;
}

void Waitable::clear_event_fd()
{
	// One read resets a (non-semaphore) eventfd's counter to zero.
	uint64_t value;
	if (event_fd_ >= 0)
		[[maybe_unused]] ssize_t rc = ::read(event_fd_, &value, sizeof(value));
	event_fd_set_ = false;
	// A pending interrupt must stay visible to the blocked reader.
	if (interrupted_.load())
		interrupt();
}

Waitable::Clock::time_point Waitable::deadline_after(int timeout_ms)
{
	return Clock::now() + std::chrono::milliseconds(timeout_ms > 0 ? timeout_ms : 0);
}

bool Waitable::timeout_left(Clock::time_point deadline, bool infinite, int *timeout_ms)
{
	*timeout_ms = -1;
	if (infinite)
		return true;
	// Rounded up: a sleep cut short by the truncation would return before the deadline.
	auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
	if (left.count() <= 0)
		return false;
	*timeout_ms = static_cast<int>(left.count());
	return true;
}

bool Waitable::prepare_engines()
{
	// Copied out: prepare_sleep takes the engine lock, under which a provider may add or
	// remove wait sources (polled_lock_) of other objects.
	ProgressEngine *engines[WaitSources::kMax];
	size_t count = 0;
	{
		std::lock_guard guard(polled_lock_);
		for (const Source &source : sources_) {
			if (source.engine)
				engines[count++] = source.engine; // at most kMax (add_wait_source)
		}
	}
	for (size_t i = 0; i < count; ++i) {
		if (!engines[i]->prepare_sleep())
			return false;
	}
	return true;
}

void Waitable::snapshot_engines(SleepFds &out)
{
	std::lock_guard guard(polled_lock_);
	out.engine_count = 0;
	for (const Source &source : sources_)
		if (source.engine)
			out.engines[out.engine_count++] = source.fd; // at most kMax (add_wait_source)
}

void Waitable::report_sleep(const SleepFds &sleep, bool own_fired, const epoll_event *ready,
			    int ready_count)
{
	// Polled fds are watched directly: their own revents say it (rxm's core engines).
	for (size_t i = 0; i + 1 < sleep.count; ++i)
		sleep_report::note(sleep.fds[i].fd, sleep.fds[i].revents != 0);
	for (size_t i = 0; i < sleep.engine_count; ++i) {
		bool fired = own_fired;
		if (ready) {
			// A full array may have left this engine out: then say fired (probe).
			fired = ready_count >= kSleepEvents;
			for (int k = 0; k < ready_count && !fired; ++k)
				fired = ready[k].data.fd == sleep.engines[i];
		}
		sleep_report::note(sleep.engines[i], fired);
	}
}

int Waitable::block_until(Clock::time_point deadline, bool infinite)
{
	if (!wait_ok())
		return -FI_ENOSYS;
	if (interrupted_.load())
		return -FI_EAGAIN;
	if (!prepare_engines() || !before_sleep())
		return 0;
	// A source without a wait fd cannot wake us: sleep at most one tick, then let the
	// caller look at it (0: "re-check") unless the caller's own deadline has passed.
	Clock::time_point wake = deadline;
	bool sleep_forever = infinite;
	if (fdless_sources_.load() > 0) {
		Clock::time_point tick = Clock::now() + std::chrono::milliseconds(kFdlessTickMs);
		wake = infinite ? tick : std::min(deadline, tick);
		sleep_forever = false;
	}
	SleepFds sleep;
	snapshot_polled(sleep);
	snapshot_engines(sleep);
	for (;;) {
		if (interrupted_.load())
			return -FI_EAGAIN;
		int timeout;
		if (!timeout_left(wake, sleep_forever, &timeout))
			return infinite || Clock::now() < deadline ? 0 : -FI_EAGAIN;
		int n;
		if (sleep.count) {
			n = ::poll(sleep.fds, sleep.count, timeout);
			if (n >= 0)
				report_sleep(sleep, sleep.fds[sleep.count - 1].revents != 0, nullptr,
					     0);
		} else {
			// Room for every wait source: which engines were ready is reported.
			epoll_event events[kSleepEvents];
			n = epoll_wait(epoll_fd_, events, kSleepEvents, timeout);
			if (n >= 0)
				report_sleep(sleep, false, events, n);
		}
		if (n > 0)
			return interrupted_.load() ? -FI_EAGAIN : 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

} // namespace util
