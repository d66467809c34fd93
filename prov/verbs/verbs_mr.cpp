#include "prov/verbs/verbs_mr.h"

#include <cerrno>
#include <cstring>

#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_endpoint.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/util/error.h"
#include "prov/util/mr_bind_flag.h"
#include "prov/util/ops_tables.h"

namespace verbs {
namespace {

constexpr uint64_t kAllAccess = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
				FI_REMOTE_WRITE;

} // namespace

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsMemoryRegion>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsMemoryRegion>().bind);
UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsMemoryRegion>().control);

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

// A remote-read-only registration whose user binds it to one endpoint may be a window.
bool window_candidate(uint64_t access, const struct iovec &iov)
{
	return (access & FI_REMOTE_READ) && !(access & FI_REMOTE_WRITE) && iov.iov_len;
}

} // namespace

VerbsMemoryRegion::VerbsMemoryRegion(VerbsDomain &domain, const struct fi_mr_attr &attr,
				     uint64_t flags)
	: util::FidObject(embedded_fid, FI_CLASS_MR, attr.context), domain_(domain)
{
	bool bind_to_ep = flags & OFI_MR_BIND_TO_EP;
	const struct iovec &iov = checked_iov(attr, flags & ~OFI_MR_BIND_TO_EP);
	util::MrCache *window_cache = bind_to_ep && domain.windows_usable() &&
					      window_candidate(attr.access, iov)
				      ? domain.mr_cache()
				      : nullptr;
	util::MrCache *cache = cacheable(attr.access, iov) ? domain.mr_cache() : nullptr;
	if (window_cache && make_window(*window_cache, iov)) {
		// key and lkey set there
	} else if (cache) {
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
	if (!window_)
		embedded_fid.pub.key = mr_->rkey;
	domain_.ref();
}

bool VerbsMemoryRegion::make_window(util::MrCache &cache, const struct iovec &iov)
{
	// The pages with every local right (the window carries the remote read): the same
	// cache entry then serves the receives into that buffer too (a ping-pong's), instead
	// of a second registration of the same pages with other rights.
	int err = 0;
	util::MrCacheEntry *entry = cache.acquire(iov.iov_base, iov.iov_len,
						  FI_SEND | FI_RECV | FI_READ | FI_WRITE, &err);
	if (!entry)
		return false;
	VerbsWindow *window = domain_.windows().take();
	if (!window) {
		VERBS_INFO(FI_LOG_MR, "ibv_alloc_mw failed (%s): a registration with remote "
				      "access instead\n", strerror(errno));
		cache.release(entry);
		return false;
	}
	cached_ = entry;
	mr_ = static_cast<struct ibv_mr *>(entry->handle);
	window_ = window;
	window_iov_ = iov;
	// The key the bind will give it: the window's index with a new 8-bit tag, so a key
	// of an earlier use of the same window is refused.
	embedded_fid.pub.key = WindowPool::next_key(*window);
	return true;
}

int VerbsMemoryRegion::bind(struct fid *bfid, uint64_t flags)
{
	if (!window_)
		return -FI_ENOSYS;
	if (flags)
		return -FI_EBADFLAGS;
	auto *ep = util::fid_cast<VerbsEndpoint>(bfid, FI_CLASS_EP);
	if (!ep || &ep->domain() != &domain_)
		return -FI_EINVAL;
	if (bind_ep_ || window_bound_)
		return -FI_EALREADY;
	ep->ref();
	bind_ep_ = ep;
	return 0;
}

int VerbsMemoryRegion::control(int command, void *)
{
	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	if (!window_)
		return -FI_ENOSYS;
	return enable_window();
}

int VerbsMemoryRegion::enable_window()
{
	if (window_bound_)
		return 0;
	if (!bind_ep_)
		return -FI_EOPBADSTATE;
	uint32_t key = static_cast<uint32_t>(embedded_fid.pub.key);
	uint32_t qp_num = 0;
	int ret = bind_ep_->bind_window(window_->mw, mr_, window_iov_.iov_base,
					window_iov_.iov_len, key, &qp_num);
	if (ret == 0) {
		window_bound_ = true;
		domain_.windows().offered(window_, qp_num, key);
	}
	bind_ep_->unref();
	bind_ep_ = nullptr;
	return ret;
}

VerbsMemoryRegion::~VerbsMemoryRegion()
{
	if (bind_ep_)
		bind_ep_->unref();
	if (window_)
		domain_.windows().give_back(window_);
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
	if (window_) {
		// The key is dead once this returns (invalidated by the peer, or deallocated),
		// before the pages go back to the cache (and the buffer back to the application).
		if (int ret = domain_.windows().give_back(window_))
			return -ret;
		window_ = nullptr;
		if (bind_ep_) {
			bind_ep_->unref();
			bind_ep_ = nullptr;
		}
	}
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
