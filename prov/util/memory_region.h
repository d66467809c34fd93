// util::MemoryRegion: the fid_mr returned by util::Domain's fi_mr_reg*. It records the
// region in the domain's MrMap for its lifetime; mem_desc points at the object (providers
// use from_desc() to turn a desc back into the region, validated against the domain). One iovec per region
// (domain_attr->mr_iov_limit = 1).
// fi_mr_bind to an endpoint of the same domain restricts the region to RMA arriving on that
// endpoint (fi_mr(3)'s endpoint binding, honoured even though FI_MR_ENDPOINT is not required).
// fi_close takes the domain lock, so it waits for a progress pass that is placing data into
// the region or sending from it; providers re-check MrMap::alive() before each such access.
#ifndef OFI_PROV_UTIL_MEMORY_REGION_H
#define OFI_PROV_UTIL_MEMORY_REGION_H

#include "prov/util/domain.h"
#include "prov/util/fid_object.h"
#include "prov/util/mr_map.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_domain.h>

namespace util {

class MemoryRegion : public FidStorage<fid_mr>, public FidObject {
public:
	// Throws util::Error on invalid attributes or key conflicts.
	MemoryRegion(Domain &domain, const struct fi_mr_attr &attr, uint64_t flags);
	~MemoryRegion() override;

	struct fid_mr *mr_fid() noexcept { return &embedded_fid.pub; }
	const MrRegion &region() const noexcept { return region_; }
	uint64_t key() const noexcept { return region_.key; }

	// The region a local descriptor (fi_mr_desc) refers to, or nullptr when 'desc' is not
	// a live registration of 'domain' (checked without dereferencing it).
	static MemoryRegion *from_desc(Domain &domain, void *desc);

	// ---- fi_ops ----
	int control(int command, void *arg);  // FI_ENABLE (no-op: a binding acts at once)
	int bind(struct fid *bfid, uint64_t flags);  // endpoints of this domain only
	int close() override;

private:
	Domain &domain_;
	MrRegion region_;
	bool removed_ = false;
};

} // namespace util

#endif
