// Allocation helpers for struct fi_info shared by getinfo, the ABI compat layer and tests.
#ifndef OFI_SRC_INFO_ALLOC_H
#define OFI_SRC_INFO_ALLOC_H

#include <rdma/fabric.h>

namespace ofi::core {

// Frees one element (not the rest of its list).
void free_one_info(fi_info *info);

// Copies a buffer with malloc so fi_freeinfo can release it; NULL for empty input.
void *dup_bytes(const void *src, size_t len);

} // namespace ofi::core

#endif
