#include "prov/util/mr_map.h"

#include "prov/util/random_key.h"

#include <rdma/fi_errno.h>

namespace util {

int MrMap::insert(MrRegion &region, uint64_t requested_key)
{
	if (region.len && !region.base)
		return -FI_EINVAL;
	std::lock_guard<std::mutex> guard(mutex_);
	if (provider_keys()) {
		do
			region.key = random_key();
		while (regions_.count(region.key));
	} else {
		if (requested_key == FI_KEY_NOTAVAIL)
			return -FI_EINVAL;
		if (regions_.count(requested_key))
			return -FI_ENOKEY;
		region.key = requested_key;
	}
	region.bound_endpoint = 0;
	region.serial = next_serial_++;
	regions_.emplace(region.key, region);
	if (region.owner)
		owners_.insert(region.owner);
	return 0;
}

int MrMap::remove(uint64_t key)
{
	std::lock_guard<std::mutex> guard(mutex_);
	auto it = regions_.find(key);
	if (it == regions_.end())
		return -FI_ENOENT;
	owners_.erase(it->second.owner);
	regions_.erase(it);
	return 0;
}

int MrMap::bind(uint64_t key, uint64_t endpoint_id)
{
	std::lock_guard<std::mutex> guard(mutex_);
	auto it = regions_.find(key);
	if (it == regions_.end() || endpoint_id == 0 || it->second.bound_endpoint)
		return -FI_EINVAL;
	it->second.bound_endpoint = endpoint_id;
	return 0;
}

int MrMap::lookup(uint64_t key, uint64_t addr, size_t len, uint64_t access, void **target,
		  uint64_t requester, uint64_t *serial) const
{
	std::lock_guard<std::mutex> guard(mutex_);
	auto it = regions_.find(key);
	if (it == regions_.end())
		return -FI_EINVAL;
	const MrRegion &region = it->second;
	// Checked before the rights, so another endpoint's region answers like no region.
	if (region.bound_endpoint && region.bound_endpoint != requester)
		return -FI_EINVAL;
	if ((region.access & access) != access)
		return -FI_EACCES;

	// Offset of the first byte inside the buffer, computed so nothing can wrap around.
	uint64_t start = virtual_addresses() ? reinterpret_cast<uintptr_t>(region.base)
					     : region.offset;
	if (addr < start)
		return -FI_EINVAL;
	uint64_t offset = addr - start;
	if (offset > region.len || len > region.len - offset)
		return -FI_EINVAL;
	if (target)
		*target = region.base + offset;
	if (serial)
		*serial = region.serial;
	return 0;
}

bool MrMap::alive(uint64_t key, uint64_t serial) const
{
	std::lock_guard<std::mutex> guard(mutex_);
	auto it = regions_.find(key);
	return it != regions_.end() && it->second.serial == serial;
}

bool MrMap::find(uint64_t key, MrRegion *out) const
{
	std::lock_guard<std::mutex> guard(mutex_);
	auto it = regions_.find(key);
	if (it == regions_.end())
		return false;
	if (out)
		*out = it->second;
	return true;
}

bool MrMap::has_owner(const void *owner) const
{
	std::lock_guard<std::mutex> guard(mutex_);
	return owner && owners_.count(owner);
}

size_t MrMap::size() const
{
	std::lock_guard<std::mutex> guard(mutex_);
	return regions_.size();
}

} // namespace util
