// util::AvSet: fi_av_set(3), an ordered subset of an address vector's addresses, naming the
// members of a collective group (fi_collective(3)). Creation and the set operations are
// local: no traffic. Each member appears once; insert appends, union appends what is new,
// intersect and diff keep the order of what remains. Members must be live addresses of the
// same AV (checked when they enter the set; an address removed from the AV later stays in
// the set, and a collective over it then fails like a send to it would).
//
// fi_av_set_addr returns a collective address: a handle that names this set (bit 62 plus a
// per-process serial number), not an AV index, so it can never be mistaken for a peer.
// fi_join_collective hands the provider both the set and that address (find_collective
// checks they belong together).
#ifndef OFI_PROV_UTIL_AV_SET_H
#define OFI_PROV_UTIL_AV_SET_H

#include "prov/util/address_vector.h"
#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_collective.h>

#include <mutex>
#include <vector>

namespace util {

class AvSet : public FidStorage<fid_av_set>, public FidObject {
public:
	static constexpr fi_addr_t kCollAddrBit = 1ULL << 62;

	// Throws Error(-FI_EINVAL) for attributes fi_av_set(3) rules out, -FI_ENOSYS for a
	// communication key (no fabric manager here). Holds a reference on the AV.
	AvSet(AddressVector &av, const struct fi_av_set_attr *attr, void *context);
	~AvSet() override;

	struct fid_av_set *av_set_fid() noexcept { return &embedded_fid.pub; }
	AddressVector &av() noexcept { return av_; }
	uint64_t flags() const noexcept { return flags_; }
	fi_addr_t coll_addr() const noexcept { return coll_addr_; }
	// A copy of the members in set order, for a join that must not see later changes.
	std::vector<fi_addr_t> members();

	// The set behind a (set, collective address) pair as fi_join_collective passes it;
	// nullptr unless 'set' is a live AvSet and 'coll_addr' is its address.
	static AvSet *find_collective(const struct fid_av_set *set, fi_addr_t coll_addr) noexcept;

	// ---- fi_ops_av_set ----
	int set_union(const struct fid_av_set *src);
	int intersect(const struct fid_av_set *src);
	int diff(const struct fid_av_set *src);
	int insert(fi_addr_t addr);
	int remove(fi_addr_t addr);
	int addr(fi_addr_t *coll_addr);

	// ---- fi_ops ----
	int close() override;

private:
	// The other set of a union/intersect/diff, if it is a live set over the same AV.
	AvSet *peer_set(const struct fid_av_set *src) noexcept;
	bool contains_locked(fi_addr_t addr) const noexcept;
	// Takes a consistent copy of 'other' (which may be this set).
	std::vector<fi_addr_t> snapshot(AvSet &other);

	AddressVector &av_;
	const uint64_t flags_;
	const fi_addr_t coll_addr_;
	std::mutex mutex_;
	std::vector<fi_addr_t> members_;
};

} // namespace util

#endif
