#include "prov/util/poll_set.h"

#include "prov/util/completion_queue.h"
#include "prov/util/counter.h"
#include "prov/util/error.h"

#include <algorithm>

namespace util {

PollSet::PollSet(Domain &domain, const struct fi_poll_attr *attr)
    : FidObject(embedded_fid, FI_CLASS_POLL, nullptr), domain_(domain)
{
	if (attr && attr->flags)
		throw Error(-FI_EBADFLAGS);
	embedded_fid.pub.fid.ops = ops_ptr<PollSet, make_fi_ops<PollSet>>();
	embedded_fid.pub.ops = ops_ptr<PollSet, make_poll_ops<PollSet>>();
	domain_.ref();
}

PollSet::~PollSet()
{
	for (FidObject *member : members_)
		member->unref();
	domain_.unref();
}

int PollSet::poll_add(struct fid *event_fid, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	FidObject *member = nullptr;
	if (auto *cq = fid_cast<CompletionQueue>(event_fid, FI_CLASS_CQ))
		member = cq;
	else if (auto *cntr = fid_cast<Counter>(event_fid, FI_CLASS_CNTR))
		member = cntr;
	if (!member)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> guard(mutex_);
	if (std::find(members_.begin(), members_.end(), member) != members_.end())
		return -FI_EALREADY;
	members_.push_back(member);
	member->ref();
	return 0;
}

int PollSet::poll_del(struct fid *event_fid, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	auto *member = fid_cast<FidObject>(event_fid);
	std::lock_guard<std::mutex> guard(mutex_);
	auto it = std::find(members_.begin(), members_.end(), member);
	if (!member || it == members_.end())
		return -FI_EINVAL;
	members_.erase(it);
	member->unref();
	return 0;
}

int PollSet::poll(void **context, int count)
{
	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	std::vector<FidObject *> members;
	{
		std::lock_guard<std::mutex> guard(mutex_);
		members = members_;
	}
	int found = 0;
	for (FidObject *member : members) {
		if (found == count)
			break;
		auto *waitable = dynamic_cast<Waitable *>(member);
		if (!waitable)
			continue;
		waitable->run_progress();
		// A counter is reported once per change; a CQ while it holds entries.
		auto *cntr = dynamic_cast<Counter *>(member);
		bool ready = cntr ? cntr->take_change() : waitable->has_events();
		if (ready)
			context[found++] = member->context();
	}
	return found;
}

int PollSet::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

} // namespace util
