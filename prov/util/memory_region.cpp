#include "prov/util/memory_region.h"

#include "prov/util/error.h"

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

int MemoryRegion::bind(struct fid *, uint64_t)
{
	return -FI_ENOSYS;  // FI_MR_ENDPOINT is not offered
}

int MemoryRegion::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

} // namespace util
