// Helpers for providers building their fi_getinfo results.
#ifndef OFI_PROV_UTIL_INFO_UTIL_H
#define OFI_PROV_UTIL_INFO_UTIL_H

#include <rdma/fabric.h>

#include <cstdint>
#include <string>

namespace util {

// The API version an info/fabric was opened with (fabric_attr->api_version; 0 means the
// current FI_VERSION(1,17)).
uint32_t api_version_of(const struct fi_info *info) noexcept;
inline bool api_at_least(uint32_t api_version, int major, int minor) noexcept
{
	return api_version == 0 || api_version >= static_cast<uint32_t>(FI_VERSION(major, minor));
}

// Deep copy of a whole list (fi_dupinfo on each element); NULL on allocation failure.
struct fi_info *dup_info_list(const struct fi_info *list);
// Appends 'item' (may itself be a list) to *list.
void append_info(struct fi_info **list, struct fi_info *item) noexcept;

// Replaces a malloc'd string field of an fi_info (freed by fi_freeinfo). Returns 0 or
// -FI_ENOMEM.
int set_string(char **field, const std::string &value);
// Replaces src_addr/dest_addr (malloc'd copies; len 0 clears).
int set_src_addr(struct fi_info *info, const void *addr, size_t len);
int set_dest_addr(struct fi_info *info, const void *addr, size_t len);

// Fills src_addr/dest_addr of 'info' from fi_getinfo's node/service/flags and the hints'
// addresses, following man fi_getinfo: with FI_SOURCE node/service name the local address;
// otherwise they name the destination (and hints->src_addr, if any, is the source).
// addr_format limits the family (FI_SOCKADDR*). Returns 0, -FI_ENODATA if the name does not
// resolve, -FI_EINVAL.
int fill_addresses(struct fi_info *info, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints, uint32_t addr_format);

// The mr_mode of a core provider that chooses keys when the application allows it
// (FI_MR_PROV_KEY) and otherwise uses the requested key, with remote addresses as offsets
// into the region (tcp, shm). A legacy FI_MR_BASIC application addresses remote memory by
// virtual address and reads provider keys (fi_mr(3)): it gets exactly that.
int offset_mr_mode_for(const struct fi_info *hints) noexcept;

// The progress model the hints ask for (data or control), FI_PROGRESS_MANUAL when they ask
// for none or for a value that is not one (hints are the application's: any integer may be
// there).
enum fi_progress progress_asked(const struct fi_info *hints, bool data) noexcept;

} // namespace util

#endif
