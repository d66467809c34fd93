#include "prov/util/event_queue.h"

#include "prov/util/error.h"
#include "prov/util/info_util.h"
#include "prov/util/wait_set.h"

#include <algorithm>
#include <cstring>

namespace util {

namespace {

enum fi_wait_obj checked_wait_obj(const struct fi_eq_attr *attr)
{
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

EventQueue::EventQueue(Fabric &fabric, const struct fi_eq_attr *attr, void *context)
    : FidObject(embedded_fid, FI_CLASS_EQ, context), fabric_(fabric),
      wait_obj_(checked_wait_obj(attr)), size_(attr->size ? attr->size : kDefaultSize)
{
	if (attr->flags & ~(FI_WRITE | FI_AFFINITY))
		throw Error(-FI_EBADFLAGS);
	if (wait_obj_ != FI_WAIT_NONE) {
		if (!wait_ok())
			throw Error(-FI_ENOMEM);
		// The fabric engine's own fds (listeners) without its nested domain engines, which
		// the fabric hands us one by one (register_eq): one epoll level less.
		int leaf = fabric_.engine().leaf_fd();
		if (leaf < 0)
			throw Error(leaf);
		check(add_wait_source(leaf));
	}
	if (wait_obj_ == FI_WAIT_SET) {
		auto *set = fid_cast<WaitSet>(&attr->wait_set->fid, FI_CLASS_WAIT);
		if (!set)
			throw Error(-FI_EINVAL);
		check(set->add(this));
		wait_set_ = attr->wait_set;
	}
	embedded_fid.pub.fid.ops = ops_ptr<EventQueue, make_fi_ops<EventQueue>>();
	embedded_fid.pub.ops = ops_ptr<EventQueue, make_eq_ops<EventQueue>>();
	if (wait_obj_ != FI_WAIT_NONE)
		fabric_.register_eq(this);
	fabric_.ref();
}

EventQueue::~EventQueue()
{
	if (wait_obj_ != FI_WAIT_NONE)
		fabric_.unregister_eq(this);
	if (wait_set_) {
		if (auto *set = fid_cast<WaitSet>(&wait_set_->fid, FI_CLASS_WAIT))
			set->remove(this);
	}
	// Connection requests nobody read still own their fi_info.
	for (Event &event : events_)
		if (event.owned_info)
			fi_freeinfo(event.owned_info);
	fabric_.unref();
}

int EventQueue::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

// ---- provider side ----

int EventQueue::push(Event &&event)
{
	LockGuard guard(lock_);
	events_.push_back(std::move(event));
	note_event_added();
	return 0;
}

int EventQueue::write_event(uint32_t event, const void *entry, size_t len)
{
	if (!entry || !len)
		return -FI_EINVAL;
	try {
		Event record;
		record.event = event;
		auto *bytes = static_cast<const uint8_t *>(entry);
		record.bytes.assign(bytes, bytes + len);
		return push(std::move(record));
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	}
}

int EventQueue::write_cm(uint32_t event, struct fid *fid, struct fi_info *info,
			 const void *cm_data, size_t cm_data_len)
{
	if (cm_data_len && !cm_data) {
		fi_freeinfo(info);
		return -FI_EINVAL;
	}
	try {
		Event record;
		record.event = event;
		record.bytes.resize(sizeof(struct fi_eq_cm_entry) + cm_data_len);
		struct fi_eq_cm_entry entry{};
		entry.fid = fid;
		entry.info = info;
		std::memcpy(record.bytes.data(), &entry, sizeof(entry));
		if (cm_data_len)
			std::memcpy(record.bytes.data() + sizeof(entry), cm_data, cm_data_len);
		record.owned_info = info;
		return push(std::move(record));
	} catch (const std::bad_alloc &) {
		fi_freeinfo(info);
		return -FI_ENOMEM;
	}
}

int EventQueue::write_error(struct fid *fid, void *context, uint64_t data, int err,
			    int prov_errno, const void *err_data, size_t err_data_size)
{
	try {
		Event record;
		record.is_error = true;
		record.error.fid = fid;
		record.error.context = context;
		record.error.data = data;
		record.error.err = err < 0 ? -err : err;
		record.error.prov_errno = prov_errno;
		if (err_data && err_data_size) {
			auto *bytes = static_cast<const uint8_t *>(err_data);
			record.err_data.assign(bytes, bytes + err_data_size);
		}
		return push(std::move(record));
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	}
}

size_t EventQueue::discard_events_of(const struct fid *fid,
				     const std::function<void(struct fi_info *)> &on_info)
{
	LockGuard guard(lock_);
	size_t before = events_.size();
	std::erase_if(events_, [fid, &on_info](Event &event) {
		const struct fid *named = nullptr;
		if (event.is_error)
			named = event.error.fid;
		else if (event.bytes.size() >= sizeof(named))
			// fi_eq_entry and fi_eq_cm_entry both start with the fid.
			std::memcpy(&named, event.bytes.data(), sizeof(named));
		if (named != fid)
			return false;
		if (event.owned_info) {
			if (on_info)
				on_info(event.owned_info);
			fi_freeinfo(event.owned_info);
		}
		return true;
	});
	if (events_.empty() && before)
		note_drained();
	return before - events_.size();
}

// ---- fi_ops_eq ----

ssize_t EventQueue::read_locked(uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	if (events_.empty()) {
		note_drained();
		return -FI_EAGAIN;
	}
	Event &head = events_.front();
	if (head.is_error)
		return -FI_EAVAIL;
	if (len < head.bytes.size())
		return -FI_ETOOSMALL;
	std::memcpy(buf, head.bytes.data(), head.bytes.size());
	*event = head.event;
	auto copied = static_cast<ssize_t>(head.bytes.size());
	if (!(flags & FI_PEEK)) {
		events_.pop_front();  // the fi_info of a CONNREQ now belongs to the app
		if (events_.empty())
			note_drained();
	}
	return copied;
}

ssize_t EventQueue::read(uint32_t *event, void *buf, size_t len, uint64_t flags)
{
	if (!event || (len && !buf))
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	note_read();
	run_progress();
	LockGuard guard(lock_);
	return read_locked(event, buf, len, flags);
}

ssize_t EventQueue::readerr(struct fi_eq_err_entry *buf, uint64_t flags)
{
	if (!buf)
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	LockGuard guard(lock_);
	if (events_.empty() || !events_.front().is_error)
		return -FI_EAGAIN;
	Event &head = events_.front();
	struct fi_eq_err_entry entry = head.error;
	const uint32_t api = fabric_.api_version();
	std::vector<uint8_t> data = (flags & FI_PEEK) ? head.err_data : std::move(head.err_data);
	last_err_data_ = std::move(data);
	entry.err_data = last_err_data_.empty() ? nullptr : last_err_data_.data();
	entry.err_data_size = last_err_data_.size();
	size_t copied = sizeof(struct fi_eq_err_entry);
	if (!api_at_least(api, 1, 5)) {
		// Pre-1.5 applications know a shorter struct without err_data_size.
		copied = offsetof(struct fi_eq_err_entry, err_data_size);
		std::memcpy(buf, &entry, copied);
	} else {
		if (buf->err_data && buf->err_data_size) {
			// 1.5+: a user buffer receives a copy of the error data.
			size_t n = std::min(buf->err_data_size, last_err_data_.size());
			std::memcpy(buf->err_data, last_err_data_.data(), n);
			entry.err_data = buf->err_data;
			entry.err_data_size = n;
		}
		*buf = entry;
	}
	if (!(flags & FI_PEEK)) {
		events_.pop_front();
		if (events_.empty())
			note_drained();
	}
	return static_cast<ssize_t>(copied);
}

ssize_t EventQueue::write(uint32_t event, const void *buf, size_t len, uint64_t flags)
{
	if (!buf || !len)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	{
		LockGuard guard(lock_);
		if (events_.size() >= size_)
			return -FI_EAGAIN;
	}
	int rc = write_event(event, buf, len);
	return rc ? rc : static_cast<ssize_t>(len);
}

ssize_t EventQueue::sread(uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags)
{
	if (!event || (len && !buf))
		return -FI_EINVAL;
	if (flags & ~FI_PEEK)
		return -FI_EBADFLAGS;
	if (wait_obj_ == FI_WAIT_NONE || wait_obj_ == FI_WAIT_SET)
		return -FI_ENOSYS;
	return wait_loop(lock_, timeout, [&]() -> ssize_t {
		run_progress();
		LockGuard guard(lock_);
		return read_locked(event, buf, len, flags);
	});
}

const char *EventQueue::strerror(int prov_errno, const void *, char *buf, size_t len)
{
	const char *text = ::strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		std::strncpy(buf, text, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return text;
}

int EventQueue::control(int command, void *arg)
{
	LockGuard guard(lock_);
	return wait_control(command, arg, wait_obj_);
}

void EventQueue::run_progress()
{
	fabric_.progress_all();
}

bool EventQueue::has_events()
{
	LockGuard guard(lock_);
	return !events_.empty();
}

} // namespace util
