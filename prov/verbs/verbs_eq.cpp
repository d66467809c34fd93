#include "prov/verbs/verbs_eq.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "prov/verbs/verbs_fabric.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/util/ops_tables.h"

namespace verbs {

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsEventQueue>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsEventQueue>().control);
UTIL_ASSERT_IMPLEMENTED(util::make_eq_ops<VerbsEventQueue>().read);
UTIL_ASSERT_IMPLEMENTED(util::make_eq_ops<VerbsEventQueue>().readerr);
UTIL_ASSERT_IMPLEMENTED(util::make_eq_ops<VerbsEventQueue>().write);
UTIL_ASSERT_IMPLEMENTED(util::make_eq_ops<VerbsEventQueue>().sread);
UTIL_ASSERT_IMPLEMENTED(util::make_eq_ops<VerbsEventQueue>().strerror);

VerbsEventQueue::VerbsEventQueue(VerbsFabric *fabric, void *context)
	: util::FidObject(embedded_fid, FI_CLASS_EQ, context), fabric_(fabric)
{
	embedded_fid.pub.fid.ops =
		util::ops_ptr<VerbsEventQueue, util::make_fi_ops<VerbsEventQueue>>();
	embedded_fid.pub.ops = util::ops_ptr<VerbsEventQueue, util::make_eq_ops<VerbsEventQueue>>();
}

int VerbsEventQueue::open(VerbsFabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
			  void *context)
{
	if (!attr || !eq)
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	auto *self = new VerbsEventQueue(fabric, context);
	self->channel_ = rdma_create_event_channel();
	self->ready_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	self->wait_fd_ = epoll_create1(EPOLL_CLOEXEC);
	self->timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	bool ok = self->channel_ && self->ready_fd_ >= 0 && self->wait_fd_ >= 0 &&
		  self->timer_fd_ >= 0 &&
		  fcntl(self->channel_->fd, F_SETFL,
			fcntl(self->channel_->fd, F_GETFL) | O_NONBLOCK) == 0;
	if (ok) {
		struct epoll_event watch {};
		watch.events = EPOLLIN;
		ok = epoll_ctl(self->wait_fd_, EPOLL_CTL_ADD, self->channel_->fd, &watch) == 0 &&
		     epoll_ctl(self->wait_fd_, EPOLL_CTL_ADD, self->ready_fd_, &watch) == 0 &&
		     epoll_ctl(self->wait_fd_, EPOLL_CTL_ADD, self->timer_fd_, &watch) == 0;
	}
	if (!ok) {
		VERBS_WARN(FI_LOG_EQ, "cannot create the rdma_cm event channel: %s\n",
			   ::strerror(errno));
		delete self;
		return -FI_ENODEV;
	}
	fabric->ref();
	*eq = &self->embedded_fid.pub;
	return 0;
}

VerbsEventQueue::~VerbsEventQueue()
{
	for (Entry &entry : entries_)
		fi_freeinfo(entry.info);
	if (channel_)
		rdma_destroy_event_channel(channel_);
	if (ready_fd_ >= 0)
		::close(ready_fd_);
	if (wait_fd_ >= 0)
		::close(wait_fd_);
	if (timer_fd_ >= 0)
		::close(timer_fd_);
}

int VerbsEventQueue::close()
{
	if (busy())
		return -FI_EBUSY;
	fabric_->unref();
	return util::FidObject::close();
}

int VerbsEventQueue::control(int command, void *arg)
{
	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		*static_cast<int *>(arg) = wait_fd_;
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

void VerbsEventQueue::update_ready_fd_locked()
{
	if (!entries_.empty() && !ready_signalled_) {
		uint64_t one = 1;
		ready_signalled_ = ::write(ready_fd_, &one, sizeof(one)) == sizeof(one);
	} else if (entries_.empty() && ready_signalled_) {
		uint64_t value;
		if (::read(ready_fd_, &value, sizeof(value)) == sizeof(value))
			ready_signalled_ = false;
	}
}

void VerbsEventQueue::push_cm_entry(uint32_t event, struct fid *fid, struct fi_info *info,
				    const std::vector<uint8_t> &data)
{
	Entry entry;
	entry.event = event;
	entry.info = info;
	entry.bytes.resize(sizeof(struct fi_eq_cm_entry) + data.size());
	struct fi_eq_cm_entry header {};
	header.fid = fid;
	header.info = info;
	std::memcpy(entry.bytes.data(), &header, sizeof(header));
	if (!data.empty())
		std::memcpy(entry.bytes.data() + sizeof(header), data.data(), data.size());
	entries_.push_back(std::move(entry));
	update_ready_fd_locked();
}

void VerbsEventQueue::push_error(struct fid *fid, int err, int prov_errno,
				 std::vector<uint8_t> err_data)
{
	Entry entry;
	entry.is_error = true;
	entry.err.fid = fid;
	entry.err.context = fid ? fid->context : nullptr;
	entry.err.err = err;
	entry.err.prov_errno = prov_errno;
	entry.err_data = std::move(err_data);
	entries_.push_back(std::move(entry));
	update_ready_fd_locked();
}

void VerbsEventQueue::process_cm_events_locked()
{
	struct rdma_cm_event *event = nullptr;
	while (rdma_get_cm_event(channel_, &event) == 0) {
		struct rdma_cm_id *owner_id =
			event->event == RDMA_CM_EVENT_CONNECT_REQUEST ? event->listen_id : event->id;
		auto *target = owner_id ? static_cast<CmEventTarget *>(owner_id->context) : nullptr;
		if (target)
			target->on_cm_event(*event, *this);
		rdma_ack_cm_event(event);
	}
	settle_deferred_locked();
}

void VerbsEventQueue::defer(CmEventTarget *target)
{
	if (std::find(deferred_.begin(), deferred_.end(), target) == deferred_.end())
		deferred_.push_back(target);
	arm_deferred_timer_locked();
}

void VerbsEventQueue::forget(CmEventTarget *target)
{
	std::lock_guard<std::recursive_mutex> guard(lock_);
	deferred_.erase(std::remove(deferred_.begin(), deferred_.end(), target), deferred_.end());
	arm_deferred_timer_locked();
}

void VerbsEventQueue::settle_deferred_locked()
{
	if (deferred_.empty())
		return;
	auto now = std::chrono::steady_clock::now();
	// A settling target may queue entries but never defers again from here.
	std::vector<CmEventTarget *> waiting;
	waiting.swap(deferred_);
	for (CmEventTarget *target : waiting)
		if (!target->settle_deferred(*this, now))
			deferred_.push_back(target);
	arm_deferred_timer_locked();
}

// The timer in the wait fd's set fires at the earliest deadline of the deferred targets, so
// a waiter (fi_eq_sread, or an app polling the FI_GETWAIT fd) wakes when one is due.
void VerbsEventQueue::arm_deferred_timer_locked()
{
	struct itimerspec when {};
	if (!deferred_.empty()) {
		auto first = deferred_.front()->deadline();
		for (CmEventTarget *target : deferred_)
			first = std::min(first, target->deadline());
		// steady_clock is CLOCK_MONOTONIC.
		auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(first.time_since_epoch()).count();
		when.it_value.tv_sec = ns / 1000000000;
		when.it_value.tv_nsec = ns % 1000000000;
		if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0)
			when.it_value.tv_nsec = 1; // all zero would disarm it
	}
	timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &when, nullptr);
	uint64_t expirations; // a fired timer stays readable until read
	if (deferred_.empty())
		while (::read(timer_fd_, &expirations, sizeof(expirations)) > 0) {
		}
}

ssize_t VerbsEventQueue::read_locked(uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	process_cm_events_locked();
	if (entries_.empty())
		return -FI_EAGAIN;
	Entry &front = entries_.front();
	if (front.is_error)
		return -FI_EAVAIL;
	if (len < front.bytes.size())
		return -FI_ETOOSMALL;
	if (event)
		*event = front.event;
	if (!front.bytes.empty())
		std::memcpy(buf, front.bytes.data(), front.bytes.size());
	ssize_t size = static_cast<ssize_t>(front.bytes.size());
	if (!(flags & FI_PEEK)) {
		front.info = nullptr; // now the app's
		entries_.pop_front();
		update_ready_fd_locked();
	}
	return size;
}

ssize_t VerbsEventQueue::read(uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	if (!buf && len)
		return -FI_EINVAL;
	if (flags & ~static_cast<uint64_t>(FI_PEEK))
		return -FI_EBADFLAGS;
	std::lock_guard<std::recursive_mutex> guard(lock_);
	return read_locked(event, buf, len, flags);
}

ssize_t VerbsEventQueue::readerr(struct fi_eq_err_entry *entry, uint64_t flags)
{
	if (!entry)
		return -FI_EINVAL;
	if (flags & ~static_cast<uint64_t>(FI_PEEK))
		return -FI_EBADFLAGS;
	std::lock_guard<std::recursive_mutex> guard(lock_);
	process_cm_events_locked();
	if (entries_.empty() || !entries_.front().is_error)
		return -FI_EAGAIN;
	Entry &front = entries_.front();
	void *user_data = entry->err_data;
	size_t user_size = entry->err_data_size;
	entry->fid = front.err.fid;
	entry->context = front.err.context;
	entry->data = front.err.data;
	entry->err = front.err.err;
	entry->prov_errno = front.err.prov_errno;
	// Since API 1.5 an app may pass its own err_data buffer; otherwise it gets ours,
	// valid until the next read.
	bool app_buffer = fabric_->api_version() >= FI_VERSION(1, 5) && user_size > 0 && user_data;
	if (app_buffer) {
		size_t n = std::min(user_size, front.err_data.size());
		if (n)
			std::memcpy(user_data, front.err_data.data(), n);
		entry->err_data_size = n;
	} else {
		last_err_data_ = front.err_data;
		entry->err_data = last_err_data_.empty() ? nullptr : last_err_data_.data();
		if (fabric_->api_version() >= FI_VERSION(1, 5))
			entry->err_data_size = last_err_data_.size();
	}
	if (!(flags & FI_PEEK)) {
		entries_.pop_front();
		update_ready_fd_locked();
	}
	return sizeof(*entry);
}

ssize_t VerbsEventQueue::write(uint32_t event, const void *buf, size_t len, uint64_t flags)
{
	(void)flags;
	if (!buf && len)
		return -FI_EINVAL;
	std::lock_guard<std::recursive_mutex> guard(lock_);
	Entry entry;
	entry.event = event;
	entry.bytes.assign(static_cast<const uint8_t *>(buf), static_cast<const uint8_t *>(buf) + len);
	entries_.push_back(std::move(entry));
	update_ready_fd_locked();
	return static_cast<ssize_t>(len);
}

ssize_t VerbsEventQueue::sread(uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
	for (;;) {
		ssize_t ret = read(event, buf, len, flags);
		if (ret != -FI_EAGAIN)
			return ret;
		int wait_ms = -1;
		if (timeout >= 0) {
			auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
				deadline - std::chrono::steady_clock::now());
			if (left.count() <= 0)
				return -FI_EAGAIN;
			wait_ms = static_cast<int>(left.count());
		}
		struct pollfd fd = {wait_fd_, POLLIN, 0};
		if (poll(&fd, 1, wait_ms) < 0 && errno != EINTR)
			return -errno;
	}
}

const char *VerbsEventQueue::strerror(int prov_errno, const void *err_data, char *buf, size_t len)
{
	(void)err_data;
	const char *text = ::strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		std::strncpy(buf, text, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return text;
}

void VerbsEventQueue::progress()
{
	std::lock_guard<std::recursive_mutex> guard(lock_);
	process_cm_events_locked();
}

int VerbsEventQueue::trywait()
{
	std::lock_guard<std::recursive_mutex> guard(lock_);
	process_cm_events_locked();
	return entries_.empty() ? 0 : -FI_EAGAIN;
}

} // namespace verbs
