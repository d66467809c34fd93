#include "prov/verbs/verbs_cq.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/verbs/verbs_request.h"
#include "prov/util/ops_tables.h"

namespace verbs {
namespace {

constexpr size_t kDefaultCqSize = 4096;
constexpr int kPollBatch = 16;

} // namespace

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsCompletionQueue>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsCompletionQueue>().control);
UTIL_ASSERT_IMPLEMENTED(util::make_cq_ops<VerbsCompletionQueue>().read);
UTIL_ASSERT_IMPLEMENTED(util::make_cq_ops<VerbsCompletionQueue>().readfrom);
UTIL_ASSERT_IMPLEMENTED(util::make_cq_ops<VerbsCompletionQueue>().readerr);
UTIL_ASSERT_IMPLEMENTED(util::make_cq_ops<VerbsCompletionQueue>().sread);
UTIL_ASSERT_IMPLEMENTED(util::make_cq_ops<VerbsCompletionQueue>().sreadfrom);
UTIL_ASSERT_IMPLEMENTED(util::make_cq_ops<VerbsCompletionQueue>().signal);
UTIL_ASSERT_IMPLEMENTED(util::make_cq_ops<VerbsCompletionQueue>().strerror);

VerbsCompletionQueue::VerbsCompletionQueue(VerbsDomain *domain, void *context)
	: util::FidObject(embedded_fid, FI_CLASS_CQ, context), domain_(domain)
{
	embedded_fid.pub.fid.ops =
		util::ops_ptr<VerbsCompletionQueue, util::make_fi_ops<VerbsCompletionQueue>>();
	embedded_fid.pub.ops =
		util::ops_ptr<VerbsCompletionQueue, util::make_cq_ops<VerbsCompletionQueue>>();
}

int fi_error_for_wc_status(enum ibv_wc_status status)
{
	return status == IBV_WC_WR_FLUSH_ERR ? FI_ECANCELED : FI_EIO;
}

int VerbsCompletionQueue::open(VerbsDomain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
			       void *context)
{
	if (!attr || !cq)
		return -FI_EINVAL;
	if (attr->flags & ~static_cast<uint64_t>(FI_AFFINITY))
		return -FI_EBADFLAGS;
	if (attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	switch (attr->format) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
	case FI_CQ_FORMAT_MSG:
	case FI_CQ_FORMAT_DATA:
	case FI_CQ_FORMAT_TAGGED:
		break;
	default:
		return -FI_EINVAL;
	}
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}

	auto *self = new VerbsCompletionQueue(domain, context);
	self->format_ = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	self->wait_obj_ = attr->wait_obj == FI_WAIT_NONE ? FI_WAIT_NONE : FI_WAIT_FD;

	int ret = 0;
	int size = static_cast<int>(std::min<size_t>(attr->size ? attr->size : kDefaultCqSize,
						     static_cast<size_t>(domain->device_attr().max_cqe)));
	int vector = (attr->flags & FI_AFFINITY) ? attr->signaling_vector : 0;
	if (self->wait_obj_ == FI_WAIT_FD) {
		self->channel_ = ibv_create_comp_channel(domain->context());
		self->signal_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (!self->channel_ || self->signal_fd_ < 0 ||
		    fcntl(self->channel_->fd, F_SETFL,
			  fcntl(self->channel_->fd, F_GETFL) | O_NONBLOCK) != 0)
			ret = -FI_ENOMEM;
	}
	if (!ret) {
		self->cq_ = ibv_create_cq(domain->context(), size, self, self->channel_, vector);
		if (!self->cq_) {
			VERBS_WARN(FI_LOG_CQ, "ibv_create_cq(%d) failed: %s\n", size, ::strerror(errno));
			ret = errno ? -errno : -FI_ENOMEM;
		}
	}
	if (ret) {
		delete self;
		return ret;
	}
	domain->ref();
	*cq = self->cq_fid();
	return 0;
}

VerbsCompletionQueue::~VerbsCompletionQueue()
{
	if (cq_)
		ibv_destroy_cq(cq_);
	if (channel_)
		ibv_destroy_comp_channel(channel_);
	if (signal_fd_ >= 0)
		::close(signal_fd_);
}

int VerbsCompletionQueue::close()
{
	if (busy())
		return -FI_EBUSY;
	domain_->unref();
	return util::FidObject::close();
}

int VerbsCompletionQueue::control(int command, void *arg)
{
	switch (command) {
	case FI_GETWAIT:
		if (!arg)
			return -FI_EINVAL;
		if (!channel_)
			return -FI_ENODATA;
		*static_cast<int *>(arg) = channel_->fd;
		return 0;
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*static_cast<enum fi_wait_obj *>(arg) = wait_obj_;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

// Consumes channel notifications so the wait fd reads as idle until the next arm fires.
void VerbsCompletionQueue::drain_channel_locked()
{
	if (!channel_)
		return;
	struct ibv_cq *event_cq;
	void *event_context;
	while (ibv_get_cq_event(channel_, &event_cq, &event_context) == 0)
		ibv_ack_cq_events(event_cq, 1);
}

void VerbsCompletionQueue::record_completion_locked(const struct ibv_wc &wc)
{
	auto *request = reinterpret_cast<VerbsRequest *>(wc.wr_id);
	RequestOwner *owner = request->owner;
	CompletionRecord record;
	record.op_context = request->context;
	record.flags = request->flags;
	bool wanted = request->report;
	if (wc.status != IBV_WC_SUCCESS) {
		record.err = fi_error_for_wc_status(wc.status);
		record.prov_errno = wc.status;
		wanted = true;
	} else if (request->is_recv) {
		record.len = wc.byte_len;
		record.buf = request->buf;
		if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM)
			record.flags = FI_RMA | FI_REMOTE_WRITE;
		if (wc.wc_flags & IBV_WC_WITH_IMM) {
			record.flags |= FI_REMOTE_CQ_DATA;
			record.data = ntohl(wc.imm_data);
		}
	}
	// Completions of an endpoint being closed (mostly flushes) have nobody to go to.
	if (wanted && !owner->closing())
		ready_.push_back(record);
	owner->release_request(request);
}

void VerbsCompletionQueue::poll_device_locked()
{
	struct ibv_wc wcs[kPollBatch];
	int n;
	do {
		n = ibv_poll_cq(cq_, kPollBatch, wcs);
		for (int i = 0; i < n; i++)
			record_completion_locked(wcs[i]);
	} while (n == kPollBatch);
}

void VerbsCompletionQueue::poll_device()
{
	std::lock_guard<std::mutex> guard(lock_);
	poll_device_locked();
}

size_t VerbsCompletionQueue::entry_size() const
{
	switch (format_) {
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	default:
		return sizeof(struct fi_cq_entry);
	}
}

void VerbsCompletionQueue::write_entry(void *dst, const CompletionRecord &record) const
{
	struct fi_cq_tagged_entry full {};
	full.op_context = record.op_context;
	full.flags = record.flags;
	full.len = record.len;
	full.buf = record.buf;
	full.data = record.data;
	full.tag = 0;
	// The formats are prefixes of the tagged entry.
	std::memcpy(dst, &full, entry_size());
}

ssize_t VerbsCompletionQueue::read(void *buf, size_t count)
{
	if (!buf && count)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> guard(lock_);
	drain_channel_locked();
	if (ready_.size() < count)
		poll_device_locked();
	if (ready_.empty())
		return -FI_EAGAIN;
	if (ready_.front().err)
		return -FI_EAVAIL;
	size_t done = 0;
	auto *out = static_cast<uint8_t *>(buf);
	while (done < count && !ready_.empty() && !ready_.front().err) {
		write_entry(out + done * entry_size(), ready_.front());
		ready_.pop_front();
		done++;
	}
	return static_cast<ssize_t>(done);
}

ssize_t VerbsCompletionQueue::readfrom(void *buf, size_t count, fi_addr_t *src_addr)
{
	ssize_t ret = read(buf, count);
	for (ssize_t i = 0; src_addr && i < ret; i++)
		src_addr[i] = FI_ADDR_NOTAVAIL;
	return ret;
}

ssize_t VerbsCompletionQueue::readerr(struct fi_cq_err_entry *entry, uint64_t flags)
{
	if (!entry)
		return -FI_EINVAL;
	if (flags & ~static_cast<uint64_t>(FI_PEEK))
		return -FI_EBADFLAGS;
	std::lock_guard<std::mutex> guard(lock_);
	if (ready_.empty() || !ready_.front().err)
		return -FI_EAGAIN;
	const CompletionRecord &record = ready_.front();
	entry->op_context = record.op_context;
	entry->flags = record.flags;
	entry->len = record.len;
	entry->buf = record.buf;
	entry->data = record.data;
	entry->tag = 0;
	entry->olen = 0;
	entry->err = record.err;
	entry->prov_errno = record.prov_errno;
	entry->err_data = nullptr;
	// err_data_size only exists for apps built against API 1.5 or later.
	if (domain_->api_version() >= FI_VERSION(1, 5))
		entry->err_data_size = 0;
	if (!(flags & FI_PEEK))
		ready_.pop_front();
	return 1;
}

ssize_t VerbsCompletionQueue::sread(void *buf, size_t count, const void *cond, int timeout)
{
	(void)cond;
	if (!channel_)
		return -FI_EINVAL;
	auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout);
	for (;;) {
		ssize_t ret = read(buf, count);
		if (ret != -FI_EAGAIN)
			return ret;
		// Arm, then look again: a completion that arrived before the arm raised no event.
		{
			std::lock_guard<std::mutex> guard(lock_);
			if (ibv_req_notify_cq(cq_, 0) != 0)
				return -FI_EIO;
		}
		ret = read(buf, count);
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
		struct pollfd fds[2] = {{channel_->fd, POLLIN, 0}, {signal_fd_, POLLIN, 0}};
		int n = poll(fds, 2, wait_ms);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (fds[1].revents & POLLIN) {
			uint64_t value;
			if (::read(signal_fd_, &value, sizeof(value)) < 0) {
				// Nothing to do: another waiter consumed the signal.
			}
			return -FI_EAGAIN;
		}
	}
}

ssize_t VerbsCompletionQueue::sreadfrom(void *buf, size_t count, fi_addr_t *src_addr,
					const void *cond, int timeout)
{
	ssize_t ret = sread(buf, count, cond, timeout);
	for (ssize_t i = 0; src_addr && i < ret; i++)
		src_addr[i] = FI_ADDR_NOTAVAIL;
	return ret;
}

int VerbsCompletionQueue::signal()
{
	if (signal_fd_ < 0)
		return -FI_ENOSYS;
	uint64_t one = 1;
	return ::write(signal_fd_, &one, sizeof(one)) == sizeof(one) ? 0 : -errno;
}

const char *VerbsCompletionQueue::strerror(int prov_errno, const void *err_data, char *buf,
					   size_t len)
{
	(void)err_data;
	const char *text = ibv_wc_status_str(static_cast<enum ibv_wc_status>(prov_errno));
	if (buf && len) {
		std::strncpy(buf, text, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return text;
}

int VerbsCompletionQueue::trywait()
{
	if (!channel_)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> guard(lock_);
	drain_channel_locked();
	if (!ready_.empty())
		return -FI_EAGAIN;
	if (ibv_req_notify_cq(cq_, 0) != 0)
		return -FI_EIO;
	// Anything that completed before the arm would never raise the fd.
	poll_device_locked();
	return ready_.empty() ? 0 : -FI_EAGAIN;
}

} // namespace verbs
