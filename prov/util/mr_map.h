// util::MrMap: the registered memory regions of a domain, by key.
//
// Keys are provider-assigned (FI_MR_PROV_KEY: 64 random bits, util::random_key, so a peer
// cannot guess the key of memory it was not given) or requested by the application
// (duplicates give -FI_ENOKEY). lookup() is the RMA target check of DESIGN rule 5: the
// key must exist, the region must grant the access (FI_REMOTE_READ / FI_REMOTE_WRITE /
// FI_READ / FI_WRITE ...), and [addr, addr+len) must lie inside the region, computed without
// overflow. A region bound to an endpoint (fi_mr_bind) answers only that endpoint: for any
// other requester it looks exactly like an unknown key (DESIGN rule 8: its existence is not
// revealed). Each registration gets a serial number, never reused, so an RMA in flight can
// ask whether the region it started on still exists (alive()) even if its key was reused. With FI_MR_VIRT_ADDR 'addr' is a virtual address inside the buffer; otherwise
// it is an offset where the region starts at its registration 'offset'.
// Thread-safe (own mutex): tcp's progress may look up while the app registers.
#ifndef OFI_PROV_UTIL_MR_MAP_H
#define OFI_PROV_UTIL_MR_MAP_H

#include <rdma/fi_domain.h>

#include <cstdint>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

namespace util {

struct MrRegion {
	uint64_t key = 0;
	uint8_t *base = nullptr;  // start of the registered buffer
	size_t len = 0;
	uint64_t access = 0;
	uint64_t offset = 0;      // fi_mr_attr.offset (non-VIRT_ADDR addressing)
	void *owner = nullptr;    // the util::MemoryRegion (or provider object)
	uint64_t bound_endpoint = 0; // Endpoint::access_id() of the only endpoint served; 0: any
	uint64_t serial = 0;      // set by insert(), unique for the map's lifetime
};

// The mr_mode bits a domain_attr value stands for: the pre-1.5 values FI_MR_BASIC (virtual
// addresses, provider keys, allocated memory) and FI_MR_SCALABLE (offsets, application keys)
// become their bit form (fi_mr(3)); a bit-form value is returned as it is.
constexpr int mr_mode_bits(int mr_mode)
{
	if (mr_mode & FI_MR_BASIC)
		return (mr_mode & ~(FI_MR_BASIC | FI_MR_SCALABLE)) | FI_MR_VIRT_ADDR |
		       FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	return mr_mode & ~FI_MR_SCALABLE;
}

class MrMap {
public:
	explicit MrMap(int mr_mode = 0) : mr_mode_(mr_mode_bits(mr_mode)) {}

	int mr_mode() const noexcept { return mr_mode_; }
	bool provider_keys() const noexcept { return mr_mode_ & FI_MR_PROV_KEY; }
	bool virtual_addresses() const noexcept { return mr_mode_ & FI_MR_VIRT_ADDR; }

	// Adds a region; region.key is set when keys are provider-assigned, otherwise
	// 'requested_key' is used. Returns 0, -FI_ENOKEY (key in use) or -FI_EINVAL.
	int insert(MrRegion &region, uint64_t requested_key);
	int remove(uint64_t key);
	// Restricts the region to RMA arriving on one endpoint (its access_id). 0, or -FI_EINVAL
	// (unknown key, id 0, or already bound: a region serves one endpoint).
	int bind(uint64_t key, uint64_t endpoint_id);

	// RMA target check for a request arriving on endpoint 'requester' (0: none in
	// particular, only unbound regions qualify). On success *target points at the first byte
	// to access and *serial (if given) names the registration for alive().
	// -FI_EINVAL: unknown key (or bound to another endpoint) or out of range;
	// -FI_EACCES: access not granted.
	int lookup(uint64_t key, uint64_t addr, size_t len, uint64_t access, void **target,
		   uint64_t requester = 0, uint64_t *serial = nullptr) const;
	// Whether the registration 'serial' found under 'key' is still registered.
	bool alive(uint64_t key, uint64_t serial) const;
	// Copy of a region's description (false if the key is unknown).
	bool find(uint64_t key, MrRegion *out) const;
	// True when 'owner' is the owner of a registered region (validates fi_mr_desc values
	// without dereferencing them).
	bool has_owner(const void *owner) const;
	size_t size() const;

private:
	int mr_mode_;
	mutable std::mutex mutex_;
	uint64_t next_serial_ = 1;
	std::unordered_map<uint64_t, MrRegion> regions_;
	std::unordered_set<const void *> owners_;
};

} // namespace util

#endif
