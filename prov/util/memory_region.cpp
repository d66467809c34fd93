#include "prov/util/memory_region.h"

#include "prov/util/endpoint.h"
#include "prov/util/error.h"

#include <mutex>

namespace util {

namespace {

// Access bits a registration may ask for.
constexpr uint64_t kKnownAccess = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ |
				  FI_REMOTE_WRITE;

MrRegion region_from(const struct fi_mr_attr &attr)
{
	if (attr.iov_count > 1)
		throw Error(-FI_EINVAL);  // mr_iov_limit is 1
	if (attr.iov_count == 1 && !attr.mr_iov)
		throw Error(-FI_EINVAL);
	if (attr.iface != FI_HMEM_SYSTEM)
		throw Error(-FI_ENOSYS);
	MrRegion region;
	if (attr.iov_count == 1) {
		region.base = static_cast<uint8_t *>(attr.mr_iov[0].iov_base);
		region.len = attr.mr_iov[0].iov_len;
		if (region.len && !region.base)
			throw Error(-FI_EINVAL);
	}
	// No access bits means "everything" (man fi_mr).
	region.access = attr.access ? attr.access : kKnownAccess;
	if (region.access & ~kKnownAccess)
		throw Error(-FI_EINVAL);
	region.offset = attr.offset;
	return region;
}

} // namespace

MemoryRegion::MemoryRegion(Domain &domain, const struct fi_mr_attr &attr, uint64_t flags)
    : FidObject(embedded_fid, FI_CLASS_MR, attr.context), domain_(domain),
      region_(region_from(attr))
{
	if (flags & ~(FI_RMA_EVENT))
		throw Error(-FI_EBADFLAGS);
	region_.owner = this;
	check(domain_.mr_map().insert(region_, attr.requested_key));
	embedded_fid.pub.key = region_.key;
	embedded_fid.pub.mem_desc = this;
	embedded_fid.pub.fid.ops = ops_ptr<MemoryRegion, make_fi_ops<MemoryRegion>>();
	domain_.ref();
}

MemoryRegion::~MemoryRegion()
{
	if (!removed_)
		domain_.mr_map().remove(region_.key);
	domain_.unref();
}

MemoryRegion *MemoryRegion::from_desc(Domain &domain, void *desc)
{
	return domain.mr_map().has_owner(desc) ? static_cast<MemoryRegion *>(desc) : nullptr;
}

int MemoryRegion::control(int command, void *)
{
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

int MemoryRegion::bind(struct fid *bfid, uint64_t flags)
{
	if (!bfid)
		return -FI_EINVAL;
	if (bfid->fclass == FI_CLASS_CNTR)
		return -FI_ENOSYS;  // remote-access counters per region are not offered
	auto *ep = fid_cast<Endpoint>(bfid, FI_CLASS_EP);
	if (!ep || &ep->domain() != &domain_ || flags)
		return -FI_EINVAL;
	return domain_.mr_map().bind(region_.key, ep->access_id());
}

int MemoryRegion::close()
{
	if (busy())
		return -FI_EBUSY;
	{
		// Once this returns no progress pass may still be placing a peer's data into the
		// region or sending from it: they run under the domain lock and re-check the
		// registration (MrMap::alive) before every access.
		std::lock_guard<Lock> guard(domain_.lock());
		domain_.mr_map().remove(region_.key);
		removed_ = true;
	}
	return FidObject::close();
}

} // namespace util
