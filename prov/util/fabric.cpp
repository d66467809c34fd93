#include "prov/util/fabric.h"

#include "prov/util/domain.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"
#include "prov/util/wait_set.h"

#include <rdma/fi_eq.h>

#include <algorithm>
#include <memory>
#include <sys/epoll.h>

namespace util {

Fabric::Fabric(const struct fi_provider *provider, const struct fi_fabric_attr *attr,
	       void *context)
    : FidObject(embedded_fid, FI_CLASS_FABRIC, context), provider_(provider),
      api_version_(attr && attr->api_version ? attr->api_version : FI_VERSION(1, 17)),
      name_(attr && attr->name ? attr->name : "")
{
	if (!engine_.valid())
		throw Error(-FI_ENOMEM);
	embedded_fid.pub.api_version = api_version_;
	install_ops<Fabric>();
}

Fabric::~Fabric() = default;

void Fabric::register_domain(Domain *domain)
{
	{
		std::lock_guard<std::recursive_mutex> guard(domains_mutex_);
		domains_.push_back(domain);
		// EQ sleepers wake for domain activity (connection events arrive on its sockets).
		for (EventQueue *eq : eqs_)
			eq->watch_fd(domain->engine().fd());
	}
	// Nested in the fabric engine, the domain's engine tells progress_all which domains
	// are busy. EQs watch it directly, not through the fabric engine fd: one epoll level
	// less under the fd an application nests (issue 17 item 4).
	engine_.add_nested_engine(domain->engine().fd(), domain->activity_watch());
}

void Fabric::unregister_domain(Domain *domain)
{
	engine_.remove_fd(domain->engine().fd());
	std::lock_guard<std::recursive_mutex> guard(domains_mutex_);
	for (EventQueue *eq : eqs_)
		eq->unwatch_fd(domain->engine().fd());
	domains_.erase(std::remove(domains_.begin(), domains_.end(), domain), domains_.end());
}

void Fabric::register_eq(EventQueue *eq)
{
	std::lock_guard<std::recursive_mutex> guard(domains_mutex_);
	eqs_.push_back(eq);
	for (Domain *domain : domains_)
		eq->watch_fd(domain->engine().fd());
}

void Fabric::unregister_eq(EventQueue *eq)
{
	std::lock_guard<std::recursive_mutex> guard(domains_mutex_);
	eqs_.erase(std::remove(eqs_.begin(), eqs_.end(), eq), eqs_.end());
}

void Fabric::progress_all()
{
	engine_.progress();
	// Held while progressing so a domain cannot be closed under our feet; recursive
	// because progress may re-enter (e.g. a handler reading an EQ).
	std::lock_guard<std::recursive_mutex> guard(domains_mutex_);
	for (size_t i = 0; i < domains_.size(); ++i)
		if (domains_[i]->needs_fabric_pass())
			domains_[i]->progress();
}

int Fabric::eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context)
{
	if (!attr || !eq)
		return -FI_EINVAL;
	auto object = std::make_unique<EventQueue>(*this, attr, context);
	*eq = object.release()->eq_fid();
	return 0;
}

int Fabric::wait_open(struct fi_wait_attr *attr, struct fid_wait **waitset)
{
	if (!attr || !waitset)
		return -FI_EINVAL;
	auto object = std::make_unique<WaitSet>(*this, attr);
	*waitset = object.release()->wait_fid();
	return 0;
}

int Fabric::trywait(struct fid **fids, int count)
{
	if (count < 0 || (count > 0 && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; ++i) {
		if (!fids[i])
			return -FI_EINVAL;
		switch (fids[i]->fclass) {
		case FI_CLASS_CQ:
		case FI_CLASS_EQ:
		case FI_CLASS_CNTR: {
			FidObject *object = fid_cast<FidObject>(fids[i]);
			Waitable *waitable = object ? object->waitable() : nullptr;
			if (!waitable)
				return -FI_EINVAL;
			int rc = waitable->trywait();
			if (rc)
				return rc;
			break;
		}
		case FI_CLASS_WAIT: {
			// A wait set is ready when any member is.
			auto *set = fid_cast<WaitSet>(fids[i], FI_CLASS_WAIT);
			if (!set)
				return -FI_EINVAL;
			int rc = set->wait(0);
			if (rc == 0)
				return -FI_EAGAIN;
			if (rc != -FI_ETIMEDOUT)
				return rc;
			break;
		}
		default:
			return -FI_EINVAL;
		}
	}
	return 0;
}

int Fabric::close()
{
	if (busy())
		return -FI_EBUSY;
	{
		std::lock_guard<std::recursive_mutex> guard(domains_mutex_);
		if (!domains_.empty())
			return -FI_EBUSY;
	}
	return FidObject::close();
}

} // namespace util
