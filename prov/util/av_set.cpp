#include "prov/util/av_set.h"

#include "prov/util/error.h"

#include <algorithm>
#include <atomic>

namespace util {

namespace {

constexpr uint64_t kSetFlags = FI_UNIVERSE | FI_BARRIER_SET | FI_BROADCAST_SET |
	FI_ALLTOALL_SET | FI_ALLREDUCE_SET | FI_ALLGATHER_SET | FI_REDUCE_SCATTER_SET |
	FI_REDUCE_SET | FI_SCATTER_SET | FI_GATHER_SET;

fi_addr_t next_coll_addr() noexcept
{
	static std::atomic<uint32_t> serial{0};
	return AvSet::kCollAddrBit | (serial.fetch_add(1, std::memory_order_relaxed) + 1);
}

// The AV indices attr asks for: a range with a stride, or every live entry (FI_UNIVERSE).
// Only live entries are taken (fi_av_set(3): "valid addresses in the AV which fall within
// the specified range").
std::vector<fi_addr_t> initial_members(AddressVector &av, const struct fi_av_set_attr &attr)
{
	std::vector<fi_addr_t> members;
	const bool ranged = attr.start_addr != FI_ADDR_NOTAVAIL || attr.end_addr != FI_ADDR_NOTAVAIL;
	if (attr.comm_key_size || attr.comm_key)
		throw Error(-FI_ENOSYS);
	if (attr.flags & ~kSetFlags)
		throw Error(-FI_EINVAL);
	if (attr.flags & FI_UNIVERSE) {
		if (ranged)
			throw Error(-FI_EINVAL);
		return av.live_addresses();
	}
	if (!ranged) {
		if (attr.stride)
			throw Error(-FI_EINVAL);
		return members;
	}
	// A range needs both ends, indices (FI_AV_TABLE), a stride, and no more entries than
	// the count promised.
	if (attr.start_addr == FI_ADDR_NOTAVAIL || attr.end_addr == FI_ADDR_NOTAVAIL ||
	    attr.start_addr > attr.end_addr || attr.stride == 0 || av.type() != FI_AV_TABLE)
		throw Error(-FI_EINVAL);
	uint64_t span = (attr.end_addr - attr.start_addr) / attr.stride + 1;
	if (attr.count && span > attr.count)
		throw Error(-FI_EINVAL);
	for (uint64_t i = 0; i < span; ++i) {
		fi_addr_t a = attr.start_addr + i * attr.stride;
		if (av.address(a))
			members.push_back(a);
	}
	return members;
}

} // namespace

AvSet::AvSet(AddressVector &av, const struct fi_av_set_attr *attr, void *context)
    : FidObject(embedded_fid, FI_CLASS_AV_SET, context), av_(av),
      flags_(attr ? attr->flags : 0), coll_addr_(next_coll_addr())
{
	if (!attr)
		throw Error(-FI_EINVAL);
	members_ = initial_members(av, *attr);
	embedded_fid.pub.fid.ops = ops_ptr<AvSet, make_fi_ops<AvSet>>();
	embedded_fid.pub.ops = ops_ptr<AvSet, make_av_set_ops<AvSet>>();
	av_.ref();
}

AvSet::~AvSet() { av_.unref(); }

int AvSet::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

std::vector<fi_addr_t> AvSet::members()
{
	std::lock_guard guard(mutex_);
	return members_;
}

AvSet *AvSet::find_collective(const struct fid_av_set *set, fi_addr_t coll_addr) noexcept
{
	AvSet *found = fid_cast<AvSet>(set ? &set->fid : nullptr, FI_CLASS_AV_SET);
	return found && found->coll_addr_ == coll_addr ? found : nullptr;
}

AvSet *AvSet::peer_set(const struct fid_av_set *src) noexcept
{
	AvSet *other = fid_cast<AvSet>(src ? &src->fid : nullptr, FI_CLASS_AV_SET);
	return other && &other->av_ == &av_ ? other : nullptr;
}

bool AvSet::contains_locked(fi_addr_t addr) const noexcept
{
	return std::find(members_.begin(), members_.end(), addr) != members_.end();
}

std::vector<fi_addr_t> AvSet::snapshot(AvSet &other)
{
	if (&other == this)
		return members_;  // caller holds our lock
	std::lock_guard guard(other.mutex_);
	return other.members_;
}

int AvSet::set_union(const struct fid_av_set *src)
{
	AvSet *other = peer_set(src);
	if (!other)
		return -FI_EINVAL;
	std::lock_guard guard(mutex_);
	for (fi_addr_t a : snapshot(*other))
		if (!contains_locked(a))
			members_.push_back(a);
	return 0;
}

int AvSet::intersect(const struct fid_av_set *src)
{
	AvSet *other = peer_set(src);
	if (!other)
		return -FI_EINVAL;
	std::lock_guard guard(mutex_);
	std::vector<fi_addr_t> keep = snapshot(*other);
	std::erase_if(members_, [&](fi_addr_t a) {
		return std::find(keep.begin(), keep.end(), a) == keep.end();
	});
	return 0;
}

int AvSet::diff(const struct fid_av_set *src)
{
	AvSet *other = peer_set(src);
	if (!other)
		return -FI_EINVAL;
	std::lock_guard guard(mutex_);
	std::vector<fi_addr_t> drop = snapshot(*other);
	std::erase_if(members_, [&](fi_addr_t a) {
		return std::find(drop.begin(), drop.end(), a) != drop.end();
	});
	return 0;
}

int AvSet::insert(fi_addr_t addr)
{
	if (addr == FI_ADDR_NOTAVAIL || !av_.address(addr))
		return -FI_EINVAL;
	std::lock_guard guard(mutex_);
	if (contains_locked(addr))
		return -FI_EINVAL;
	members_.push_back(addr);
	return 0;
}

int AvSet::remove(fi_addr_t addr)
{
	std::lock_guard guard(mutex_);
	auto it = std::find(members_.begin(), members_.end(), addr);
	if (it == members_.end())
		return -FI_EINVAL;
	members_.erase(it);
	return 0;
}

int AvSet::addr(fi_addr_t *coll_addr)
{
	if (!coll_addr)
		return -FI_EINVAL;
	*coll_addr = coll_addr_;
	return 0;
}

} // namespace util
