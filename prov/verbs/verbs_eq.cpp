#include "prov/verbs/verbs_eq.h"

#include <fcntl.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "prov/verbs/verbs_fabric.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/util/error.h"
#include "prov/util/info_util.h"

namespace verbs {
namespace {

// The channel is the wait object: wait sets (verbs has none) and yielding are not offered.
const struct fi_eq_attr &checked_attr(const struct fi_eq_attr &attr)
{
	switch (util::raw_enum(attr.wait_obj)) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		return attr;
	default:
		throw util::Error(-FI_ENOSYS);
	}
}

struct rdma_event_channel *open_channel()
{
	struct rdma_event_channel *channel = rdma_create_event_channel();
	int flags = channel ? fcntl(channel->fd, F_GETFL) : -1;
	if (flags < 0 || fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
		VERBS_WARN(FI_LOG_EQ, "cannot create the rdma_cm event channel: %s\n",
			   ::strerror(errno));
		if (channel)
			rdma_destroy_event_channel(channel);
		throw util::Error(-FI_ENODEV);
	}
	return channel;
}

} // namespace

void VerbsEventQueue::ChannelDeleter::operator()(struct rdma_event_channel *channel) const
{
	rdma_destroy_event_channel(channel);
}

VerbsEventQueue::TimerFd::TimerFd()
	: fd(timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC))
{
	if (fd < 0)
		throw util::Error(-FI_ENOMEM);
}

VerbsEventQueue::TimerFd::~TimerFd()
{
	::close(fd);
}

VerbsEventQueue::VerbsEventQueue(VerbsFabric &fabric, const struct fi_eq_attr &attr,
				 void *context)
	: util::EventQueue(fabric, &checked_attr(attr), context), channel_(open_channel())
{
	if (attr.wait_obj != FI_WAIT_NONE) {
		// What wakes a sleeper here comes through the channel or the timer; verbs puts
		// nothing on the fabric's progress engine, so its fd would be a useless path.
		remove_wait_source(fabric.engine().fd());
		util::check(add_polled_fd(channel_->fd));
		util::check(add_polled_fd(timer_.fd));
	}
}

VerbsEventQueue::~VerbsEventQueue()
{
	remove_polled_fd(channel_->fd);
	remove_polled_fd(timer_.fd);
}

void VerbsEventQueue::push_cm_entry(uint32_t event, struct fid *fid, struct fi_info *info,
				    const std::vector<uint8_t> &data)
{
	int ret = write_cm(event, fid, info, data.data(), data.size());
	if (ret)
		VERBS_WARN(FI_LOG_EQ, "event %u lost: %s\n", event, fi_strerror(-ret));
}

void VerbsEventQueue::push_error(struct fid *fid, int err, int prov_errno,
				 std::vector<uint8_t> err_data)
{
	int ret = write_error(fid, fid ? fid->context : nullptr, 0, err, prov_errno,
			      err_data.data(), err_data.size());
	if (ret)
		VERBS_WARN(FI_LOG_EQ, "error event %d lost: %s\n", err, fi_strerror(-ret));
}

void VerbsEventQueue::process_cm_events_locked()
{
	struct rdma_cm_event *event = nullptr;
	while (rdma_get_cm_event(channel_.get(), &event) == 0) {
		struct rdma_cm_id *owner_id =
			event->event == RDMA_CM_EVENT_CONNECT_REQUEST ? event->listen_id : event->id;
		auto *target = owner_id ? static_cast<CmEventTarget *>(owner_id->context) : nullptr;
		if (target)
			target->on_cm_event(*event, *this);
		rdma_ack_cm_event(event);
	}
	settle_deferred_locked();
}

void VerbsEventQueue::progress()
{
	std::lock_guard<std::recursive_mutex> guard(lock_);
	process_cm_events_locked();
}

// No rdma_get_cm_event here: an event the kernel holds leaves the channel fd readable and a
// due deferred target the timer fd, and both are among the polled fds, so a sleeper on
// them wakes at once. Reading the channel before every sleep cost a system call per sleep
// (0.4-0.6 per round trip of a verbs;ofi_rxm fi_cq_sread ping-pong in the Soft-RoCE VM).
int VerbsEventQueue::trywait()
{
	return util::EventQueue::trywait();
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

// The timer among the polled fds fires at the earliest deadline of the deferred targets, so
// a waiter (fi_eq_sread, or an app polling the FI_GETWAIT fd) wakes when one is due; and
// at least every kDeferredRecheck meanwhile: what settles a target early (its sends
// completing) shows on the CQ, not on this EQ's fds, and a reader that reads this EQ only
// when its fd is readable (ofi_rxm after a sleep that saw it quiet) would otherwise answer
// the peer's disconnect only at the deadline.
void VerbsEventQueue::arm_deferred_timer_locked()
{
	struct itimerspec when {};
	if (!deferred_.empty()) {
		auto first = std::chrono::steady_clock::now() + kDeferredRecheck;
		for (CmEventTarget *target : deferred_)
			first = std::min(first, target->deadline());
		// steady_clock is CLOCK_MONOTONIC.
		auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(first.time_since_epoch()).count();
		when.it_value.tv_sec = ns / 1000000000;
		when.it_value.tv_nsec = ns % 1000000000;
		if (when.it_value.tv_sec == 0 && when.it_value.tv_nsec == 0)
			when.it_value.tv_nsec = 1; // all zero would disarm it
	}
	timerfd_settime(timer_.fd, TFD_TIMER_ABSTIME, &when, nullptr);
	uint64_t expirations; // a fired timer stays readable until read
	if (deferred_.empty())
		while (::read(timer_.fd, &expirations, sizeof(expirations)) > 0) {
		}
}

} // namespace verbs
