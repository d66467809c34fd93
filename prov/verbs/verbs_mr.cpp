#include "prov/verbs/verbs_mr.h"

#include <cerrno>
#include <cstring>

#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/util/error.h"
#include "prov/util/ops_tables.h"

namespace verbs {
namespace {

constexpr uint64_t kAllAccess = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
				FI_REMOTE_WRITE;

} // namespace

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsMemoryRegion>().close);

VerbsMemoryRegion *VerbsMemoryRegion::from_desc(const void *desc)
{
	// Every send and receive looks its descriptor up: no RTTI walk there.
	return util::fid_cast_exact<VerbsMemoryRegion>(static_cast<const struct fid *>(desc));
}

int VerbsMemoryRegion::ibv_access_for(uint64_t access)
{
	if (access == 0)
		access = kAllAccess;
	int ibv = 0;
	// Data lands in the buffer for receives and for the results of RMA reads.
	if (access & (FI_RECV | FI_READ))
		ibv |= IBV_ACCESS_LOCAL_WRITE;
	if (access & FI_REMOTE_READ)
		ibv |= IBV_ACCESS_REMOTE_READ;
	// Verbs requires local write permission alongside remote write.
	if (access & FI_REMOTE_WRITE)
		ibv |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	return ibv;
}

namespace {

// The one iovec of a registration, checked.
const struct iovec &checked_iov(const struct fi_mr_attr &attr, uint64_t flags)
{
	if (flags)
		throw util::Error(-FI_EBADFLAGS);
	if (attr.access & ~kAllAccess)
		throw util::Error(-FI_EINVAL);
	if (attr.iov_count != 1 || !attr.mr_iov)
		throw util::Error(attr.iov_count > 1 ? -FI_ENOSYS : -FI_EINVAL);
	if (attr.iface != FI_HMEM_SYSTEM)
		throw util::Error(-FI_ENOSYS);
	const struct iovec &iov = attr.mr_iov[0];
	if (!iov.iov_base && iov.iov_len)
		throw util::Error(-FI_EINVAL);
	return iov;
}

struct ibv_mr *register_iov(VerbsDomain &domain, const struct iovec &iov, uint64_t fi_access)
{
	int access = VerbsMemoryRegion::ibv_access_for(fi_access);
	if (params().use_odp)
		access |= IBV_ACCESS_ON_DEMAND;
	struct ibv_mr *mr = ibv_reg_mr(domain.pd(), iov.iov_base, iov.iov_len, access);
	if (!mr) {
		int err = errno ? errno : ENOMEM;
		VERBS_WARN(FI_LOG_MR, "ibv_reg_mr(%p, %zu) failed: %s\n", iov.iov_base, iov.iov_len,
			   strerror(err));
		throw util::Error(-err);
	}
	return mr;
}

// Registrations a peer cannot use (no remote access) may outlive their region in the cache.
bool cacheable(uint64_t access, const struct iovec &iov)
{
	return access && !(access & (FI_REMOTE_READ | FI_REMOTE_WRITE)) && iov.iov_len;
}

} // namespace

VerbsMemoryRegion::VerbsMemoryRegion(VerbsDomain &domain, const struct fi_mr_attr &attr,
				     uint64_t flags)
	: util::FidObject(embedded_fid, FI_CLASS_MR, attr.context), domain_(domain)
{
	const struct iovec &iov = checked_iov(attr, flags);
	util::MrCache *cache = cacheable(attr.access, iov) ? domain.mr_cache() : nullptr;
	if (cache) {
		int err = 0;
		cached_ = cache->acquire(iov.iov_base, iov.iov_len, attr.access, &err);
		if (!cached_)
			throw util::Error(err ? err : -FI_ENOMEM);
		mr_ = static_cast<struct ibv_mr *>(cached_->handle);
	} else {
		mr_ = register_iov(domain, iov, attr.access);
	}
	embedded_fid.pub.fid.ops =
		util::ops_ptr<VerbsMemoryRegion, util::make_fi_ops<VerbsMemoryRegion>>();
	embedded_fid.pub.mem_desc = &embedded_fid.pub;
	embedded_fid.pub.key = mr_->rkey;
	domain_.ref();
}

VerbsMemoryRegion::~VerbsMemoryRegion()
{
	if (cached_)
		domain_.mr_cache()->release(cached_);
	else if (mr_)
		ibv_dereg_mr(mr_);
	domain_.unref();
}

bool VerbsMemoryRegion::covers(const void *addr, size_t len) const
{
	auto start = reinterpret_cast<uintptr_t>(mr_->addr);
	auto want = reinterpret_cast<uintptr_t>(addr);
	return want >= start && len <= mr_->length && want - start <= mr_->length - len;
}

int VerbsMemoryRegion::close()
{
	if (cached_) {
		domain_.mr_cache()->release(cached_);
		cached_ = nullptr;
		mr_ = nullptr;
		return util::FidObject::close();
	}
	// A registration the device refuses to release stays open, so the caller sees why.
	int ret = ibv_dereg_mr(mr_);
	if (ret)
		return -ret;
	mr_ = nullptr;
	return util::FidObject::close();
}

} // namespace verbs
