#include "prov/verbs/verbs_cq.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/verbs/verbs_request.h"
#include "prov/util/error.h"
#include "prov/util/info_util.h"

namespace verbs {
namespace {

constexpr size_t kDefaultCqSize = 4096;
constexpr int kPollBatch = 16;

// The wc_flags bits of a receive whose send invalidated a key of ours. rxe passes the
// kernel's work completion flags to user space unconverted (its CQ is a ring the kernel
// writes), and the kernel's IB_WC_WITH_INVALIDATE is 1 << 2 (libibverbs' IBV_WC_IP_CSUM_OK,
// which rxe never sets); other devices convert to IBV_WC_WITH_INV.
unsigned int invalidation_flags(VerbsDomain &domain)
{
	const char *name = ibv_get_device_name(domain.context()->device);
	bool rxe = name && std::strncmp(name, "rxe", 3) == 0;
	return IBV_WC_WITH_INV | (rxe ? 1u << 2 : 0u);
}

struct ibv_comp_channel *open_channel(VerbsDomain &domain, enum fi_wait_obj wait_obj)
{
	if (wait_obj == FI_WAIT_NONE)
		return nullptr;
	struct ibv_comp_channel *channel = ibv_create_comp_channel(domain.context());
	if (!channel)
		throw util::Error(-FI_ENOMEM);
	// Reads consume its events without blocking.
	int flags = fcntl(channel->fd, F_GETFL);
	if (flags < 0 || fcntl(channel->fd, F_SETFL, flags | O_NONBLOCK) != 0) {
		ibv_destroy_comp_channel(channel);
		throw util::Error(-FI_ENOMEM);
	}
	return channel;
}

} // namespace

int fi_error_for_wc_status(enum ibv_wc_status status)
{
	return status == IBV_WC_WR_FLUSH_ERR ? FI_ECANCELED : FI_EIO;
}

void VerbsCompletionQueue::ChannelDeleter::operator()(struct ibv_comp_channel *channel) const
{
	ibv_destroy_comp_channel(channel);
}

void VerbsCompletionQueue::CqDeleter::operator()(struct ibv_cq *cq) const
{
	ibv_destroy_cq(cq);
}

struct fi_cq_attr VerbsCompletionQueue::checked_attr(const struct fi_cq_attr &attr,
						      const struct ibv_device_attr &device)
{
	if (attr.flags & ~static_cast<uint64_t>(FI_AFFINITY))
		throw util::Error(-FI_EBADFLAGS);
	// A threshold would need a device event per completion: not offered.
	if (util::raw_enum(attr.wait_cond) != FI_CQ_COND_NONE)
		throw util::Error(-FI_ENOSYS);
	if (util::raw_enum(attr.format) > FI_CQ_FORMAT_TAGGED)
		throw util::Error(-FI_EINVAL);
	// Blocking is on the completion channel: wait sets (verbs has none) and yielding are
	// not offered.
	switch (util::raw_enum(attr.wait_obj)) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		throw util::Error(-FI_ENOSYS);
	}
	struct fi_cq_attr checked = attr;
	checked.size = std::min<size_t>(attr.size ? attr.size : kDefaultCqSize,
					static_cast<size_t>(device.max_cqe));
	return checked;
}

VerbsCompletionQueue::VerbsCompletionQueue(VerbsDomain &domain, const struct fi_cq_attr &attr,
					   void *context)
	: util::CompletionQueue(domain, &attr, context), channel_(open_channel(domain, wait_obj())),
	  yield_before_sleep_(params().yield_before_sleep), domain_(domain),
	  invalidation_flags_(invalidation_flags(domain))
{
	int vector = (attr.flags & FI_AFFINITY) ? attr.signaling_vector : 0;
	cq_.reset(ibv_create_cq(domain.context(), static_cast<int>(attr.size), this,
				channel_.get(), vector));
	if (!cq_) {
		VERBS_WARN(FI_LOG_CQ, "ibv_create_cq(%zu) failed: %s\n", attr.size, ::strerror(errno));
		throw util::Error(errno ? -errno : -FI_ENOMEM);
	}
	if (channel_) {
		// Everything that wakes a sleeper here comes through the channel; verbs puts
		// nothing on the domain's progress engine, so its fd would be a useless path.
		remove_wait_source(domain.engine().fd());
		util::check(add_polled_fd(channel_->fd));
	}
	install_ops<VerbsCompletionQueue>();
}

VerbsCompletionQueue::~VerbsCompletionQueue()
{
	if (channel_)
		remove_polled_fd(channel_->fd);
}

void VerbsCompletionQueue::record_completion_locked(const struct ibv_wc &wc)
{
	auto *request = reinterpret_cast<VerbsRequest *>(wc.wr_id);
	RequestOwner *owner = request->owner;
	// Completions of an endpoint being closed (mostly flushes) have nobody to go to.
	bool wanted = !owner->closing() && (request->report || wc.status != IBV_WC_SUCCESS);
	if (!wanted) {
		owner->release_request(request);
		return;
	}
	if (wc.status != IBV_WC_SUCCESS) {
		struct fi_cq_err_entry error {};
		error.op_context = request->context;
		error.flags = request->flags;
		error.err = fi_error_for_wc_status(wc.status);
		error.prov_errno = wc.status;
		write_error(error);
	} else if (request->is_recv) {
		uint64_t flags = request->flags;
		uint64_t data = 0;
		if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			flags = FI_RMA | FI_REMOTE_WRITE;
		if (wc.wc_flags & IBV_WC_WITH_IMM) {
			flags |= FI_REMOTE_CQ_DATA;
			data = ntohl(wc.imm_data);
		} else if ((wc.wc_flags & invalidation_flags_) && domain_.windows_usable()) {
			// The device killed one of our window keys for this send: the window
			// may go back to the pool at its region's close (verbs_window_pool.h).
			domain_.windows().note_invalidated(wc.qp_num, wc.invalidated_rkey);
		}
		write(request->context, flags, wc.byte_len, request->buf, data);
	} else {
		write(request->context, request->flags);
	}
	owner->release_request(request);
}

void VerbsCompletionQueue::poll_device_locked()
{
	struct ibv_wc wcs[kPollBatch];
	int n;
	bool polled = false;
	do {
		n = ibv_poll_cq(cq_.get(), kPollBatch, wcs);
		polled |= n > 0;
		for (int i = 0; i < n; i++)
			record_completion_locked(wcs[i]);
	} while (n == kPollBatch);
	if (!channel_event_possible_)
		return;
	polled_since_arm_ |= polled;
	// Consume the channel's event (if the arm fired) so its fd reads idle until the next
	// arm fires. Without a completion since the arm it cannot have fired: no system call.
	// An event fired by a completion not polled yet is consumed by the poll that finds it.
	if (polled_since_arm_) {
		struct ibv_cq *event_cq;
		void *event_context;
		if (ibv_get_cq_event(channel_.get(), &event_cq, &event_context) == 0) {
			ibv_ack_cq_events(event_cq, 1);
			channel_event_possible_ = false;
			polled_since_arm_ = false;
		}
	}
}

void VerbsCompletionQueue::poll_device()
{
	std::lock_guard<std::mutex> guard(poll_lock_);
	poll_device_locked();
}

void VerbsCompletionQueue::progress_for_read(size_t count)
{
	// What is queued already answers the read: the device keeps the rest until asked.
	if (count && queued() >= count)
		return;
	poll_device();
}

bool VerbsCompletionQueue::arm_locked()
{
	// The last arm has seen no completion: it still stands (a completion added since then
	// but not polled yet has fired it, and the poll below finds that one).
	if (channel_event_possible_ && !polled_since_arm_) {
		poll_device_locked();
		return true;
	}
	if (ibv_req_notify_cq(cq_.get(), 0) != 0) {
		VERBS_WARN(FI_LOG_CQ, "ibv_req_notify_cq failed: %s\n", ::strerror(errno));
		return false;
	}
	channel_event_possible_ = true;
	polled_since_arm_ = false;
	poll_device_locked();
	return true;
}

bool VerbsCompletionQueue::nothing_after_yield()
{
	{
		std::lock_guard<std::mutex> guard(poll_lock_);
		poll_device_locked();
		if (has_events())
			return false;
	}
	// The peer of a ping-pong or the sender of a stream is often runnable on this CPU,
	// woken by what we sent or preempted by our wake-up: letting it run first gives its
	// answer (or the rest of its burst) the chance to be here when we look again, instead
	// of a sleep and a wake-up per message. With nobody else runnable this returns at once.
	if (yield_before_sleep_)
		sched_yield();
	return true;
}

bool VerbsCompletionQueue::before_sleep()
{
	if (!nothing_after_yield())
		return false;
	std::lock_guard<std::mutex> guard(poll_lock_);
	// Without an armed CQ nothing would wake the sleeper: re-check instead of sleeping.
	return arm_locked() && !has_events();
}

int VerbsCompletionQueue::trywait()
{
	if (!channel_)
		return -FI_EINVAL;
	if (!nothing_after_yield())
		return -FI_EAGAIN;
	{
		std::lock_guard<std::mutex> guard(poll_lock_);
		poll_device_locked();
		if (has_events())
			return -FI_EAGAIN;
		if (!arm_locked())
			return -FI_EIO;
	}
	return util::CompletionQueue::trywait();
}

} // namespace verbs
