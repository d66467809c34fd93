#include "prov/util/domain.h"

#include "prov/util/address_vector.h"
#include "prov/util/completion_queue.h"
#include "prov/util/counter.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"
#include "prov/util/memory_region.h"
#include "prov/util/poll_set.h"

#include <rdma/providers/fi_log.h>

#include <cstring>
#include <memory>

namespace util {

namespace {

struct fi_info *copy_info(const struct fi_info *info)
{
	struct fi_info *copy = fi_dupinfo(info);
	if (!copy || !copy->domain_attr)
		throw Error(-FI_ENOMEM);
	return copy;
}

Lock::Kind lock_kind_of(const struct fi_info *info)
{
	const fi_domain_attr *attr = info->domain_attr;
	return Lock::kind_for(attr->threading, attr->data_progress, attr->control_progress);
}

} // namespace

Domain::Domain(Fabric &fabric, const struct fi_info *info, void *context,
	       AutoProgress auto_progress)
    : FidObject(embedded_fid, FI_CLASS_DOMAIN, context), fabric_(fabric),
      info_(copy_info(info)), lock_kind_(lock_kind_of(info_)),
      auto_progress_(info_->domain_attr->data_progress == FI_PROGRESS_AUTO),
      engine_(lock_kind_), mr_map_(info_->domain_attr->mr_mode)
{
	if (!engine_.valid()) {
		fi_freeinfo(info_);
		throw Error(-FI_ENOMEM);
	}
	if (auto_progress_ && auto_progress == AutoProgress::engine_thread) {
		int rc = engine_.start_thread();
		if (rc) {
			fi_freeinfo(info_);
			throw Error(rc);
		}
	}
	install_ops<Domain>();
	fabric_.register_domain(this);
	fabric_.ref();
}

// Cleanup lives here (not in close) so that a provider constructor throwing after this
// base was built still unwinds cleanly.
Domain::~Domain()
{
	engine_.stop_thread();
	if (eq_)
		eq_->unref();
	fabric_.unregister_domain(this);
	fabric_.unref();
	fi_freeinfo(info_);
}

const char *Domain::prov_strerror(int prov_errno, const void *, char *buf, size_t len)
{
	const char *text = ::strerror(prov_errno < 0 ? -prov_errno : prov_errno);
	if (buf && len) {
		std::strncpy(buf, text, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return text;
}

int Domain::cq_open(struct fi_cq_attr *attr, struct fid_cq **cq, void *context)
{
	if (!attr || !cq)
		return -FI_EINVAL;
	auto object = std::make_unique<CompletionQueue>(*this, attr, context);
	*cq = object.release()->cq_fid();
	return 0;
}

int Domain::cntr_open(struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context)
{
	if (!cntr)
		return -FI_EINVAL;
	auto object = std::make_unique<Counter>(*this, attr, context);
	*cntr = object.release()->cntr_fid();
	return 0;
}

int Domain::av_open(struct fi_av_attr *attr, struct fid_av **av, void *context)
{
	if (!attr || !av)
		return -FI_EINVAL;
	auto object = std::make_unique<AddressVector>(*this, attr, context);
	*av = object.release()->av_fid();
	return 0;
}

int Domain::poll_open(struct fi_poll_attr *attr, struct fid_poll **pollset)
{
	if (!pollset)
		return -FI_EINVAL;
	auto object = std::make_unique<PollSet>(*this, attr);
	*pollset = object.release()->poll_fid();
	return 0;
}

int Domain::mr_reg(const void *buf, size_t len, uint64_t access, uint64_t offset,
		   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov{const_cast<void *>(buf), len};
	return mr_regv(&iov, 1, access, offset, requested_key, flags, mr, context);
}

int Domain::mr_regv(const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
		    uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr{};
	attr.mr_iov = iov;
	attr.iov_count = count;
	attr.access = access;
	attr.offset = offset;
	attr.requested_key = requested_key;
	attr.context = context;
	return mr_regattr(&attr, flags, mr);
}

int Domain::mr_regattr(const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr)
{
	if (!attr || !mr)
		return -FI_EINVAL;
	auto object = std::make_unique<MemoryRegion>(*this, *attr, flags);
	*mr = object.release()->mr_fid();
	report_registration(*mr, attr->context);
	return 0;
}

void Domain::report_registration(struct fid_mr *mr, void *context)
{
	if (!eq_ || !(eq_flags_ & FI_REG_MR))
		return;
	// Registration is synchronous; still report it as the app asked for events.
	struct fi_eq_entry entry{};
	entry.fid = &mr->fid;
	entry.context = context;
	eq_->write_event(FI_MR_COMPLETE, &entry, sizeof(entry));
}

int Domain::bind(struct fid *bfid, uint64_t flags)
{
	if (flags & ~FI_REG_MR)
		return -FI_EBADFLAGS;
	auto *eq = fid_cast<EventQueue>(bfid, FI_CLASS_EQ);
	if (!eq)
		return -FI_EINVAL;
	if (eq_)
		return -FI_EALREADY;
	eq->ref();
	eq_ = eq;
	eq_flags_ = flags;
	return 0;
}

int Domain::close()
{
	if (busy())
		return -FI_EBUSY;
	// Before any destructor runs: no progress thread or EQ read may reach the provider's
	// half-destroyed derived object. (The destructor repeats both for failed opens.)
	engine_.stop_thread();
	fabric_.unregister_domain(this);
	return FidObject::close();
}

} // namespace util
