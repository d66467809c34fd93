#include "prov/util/waitable.h"

#include <rdma/fi_errno.h>

#include <cerrno>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace util {

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
	if (epoll_fd_ >= 0)
		::close(epoll_fd_);
	if (event_fd_ >= 0)
		::close(event_fd_);
}

int Waitable::trywait()
{
	if (has_events())
		return -FI_EAGAIN;
	uses_trywait_ = true;
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
	exported_ = true;
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
	default:
		return -FI_ENOSYS;
	}
}

void Waitable::set_observed_by_wait_set(bool on)
{
	in_wait_set_ = on;
	if (on && has_events())
		set_event_fd();
}

int Waitable::add_wait_source(int fd)
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

void Waitable::remove_wait_source(int fd)
{
	if (wait_ok() && fd >= 0)
		epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr);
}

void Waitable::interrupt()
{
	interrupted_ = true;
	uint64_t one = 1;
	if (event_fd_ >= 0 && ::write(event_fd_, &one, sizeof(one)) == sizeof(one))
		event_fd_set_ = true;  // cleared by the next drain once the interrupt is consumed
}

bool Waitable::observed() const noexcept
{
	if (waiters_.load() > 0 || in_wait_set_.load())
		return true;
	return exported_.load() && (!uses_trywait_.load() || armed_.load());
}

void Waitable::note_event_added()
{
	if (!event_fd_set_ && observed())
		set_event_fd();
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
	auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
	if (left.count() <= 0)
		return false;
	*timeout_ms = static_cast<int>(left.count());
	return true;
}

int Waitable::block_until(Clock::time_point deadline, bool infinite)
{
	if (!wait_ok())
		return -FI_ENOSYS;
	for (;;) {
		if (interrupted_.load())
			return -FI_EAGAIN;
		int timeout;
		if (!timeout_left(deadline, infinite, &timeout))
			return -FI_EAGAIN;
		epoll_event event;
		int n = epoll_wait(epoll_fd_, &event, 1, timeout);
		if (n > 0)
			return interrupted_.load() ? -FI_EAGAIN : 0;
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n == 0 && !infinite && Clock::now() >= deadline)
			return -FI_EAGAIN;
	}
}

} // namespace util
