#include "prov/util/wait_set.h"

#include "prov/util/error.h"
#include "prov/util/waitable.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <sys/epoll.h>
#include <unistd.h>

namespace util {

WaitSet::WaitSet(Fabric &fabric, const struct fi_wait_attr *attr)
    : FidObject(embedded_fid, FI_CLASS_WAIT, nullptr), fabric_(fabric)
{
	if (attr->flags)
		throw Error(-FI_EBADFLAGS);
	if (raw_enum(attr->wait_obj) != FI_WAIT_UNSPEC && raw_enum(attr->wait_obj) != FI_WAIT_FD)
		throw Error(-FI_ENOSYS);
	epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
	if (epoll_fd_ < 0)
		throw Error(-FI_ENOMEM);
	embedded_fid.pub.fid.ops = ops_ptr<WaitSet, make_fi_ops<WaitSet>>();
	embedded_fid.pub.ops = ops_ptr<WaitSet, make_wait_ops<WaitSet>>();
	fabric_.ref();
}

WaitSet::~WaitSet()
{
	::close(epoll_fd_);
	fabric_.unref();
}

int WaitSet::add(Waitable *member)
{
	epoll_event ev{};
	ev.events = EPOLLIN;
	ev.data.ptr = member;
	if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, member->wait_fd(), &ev))
		return -errno;
	{
		std::lock_guard<std::mutex> guard(mutex_);
		members_.push_back(member);
	}
	member->set_observed_by_wait_set(true);
	ref();
	return 0;
}

void WaitSet::remove(Waitable *member)
{
	std::lock_guard<std::mutex> guard(mutex_);
	auto it = std::find(members_.begin(), members_.end(), member);
	if (it == members_.end())
		return;
	members_.erase(it);
	epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, member->wait_fd(), nullptr);
	unref();
}

int WaitSet::wait(int timeout)
{
	using Clock = std::chrono::steady_clock;
	const auto deadline = Clock::now() + std::chrono::milliseconds(timeout > 0 ? timeout : 0);
	for (;;) {
		std::vector<Waitable *> members;
		{
			std::lock_guard<std::mutex> guard(mutex_);
			members = members_;
		}
		for (Waitable *member : members) {
			if (member->layered_trywait() == -FI_EAGAIN)
				return 0;
		}
		int left = -1;
		if (timeout >= 0) {
			auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
					  deadline - Clock::now())
					  .count();
			if (ms <= 0)
				return -FI_ETIMEDOUT;
			left = static_cast<int>(ms);
		}
		epoll_event event;
		int n = epoll_wait(epoll_fd_, &event, 1, left);
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

int WaitSet::control(int command, void *arg)
{
	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		*static_cast<int *>(arg) = epoll_fd_;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*static_cast<enum fi_wait_obj *>(arg) = FI_WAIT_FD;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int WaitSet::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

} // namespace util
