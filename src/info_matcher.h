// Generic fi_getinfo hint matching, applied by the core to every provider's results so that
// providers need not repeat it (man fi_getinfo: non-zero hints are requirements).
#ifndef OFI_SRC_INFO_MATCHER_H
#define OFI_SRC_INFO_MATCHER_H

#include <rdma/fabric.h>

#include <cstdint>

namespace ofi::core {

// Capability groups from man fi_getinfo.
inline constexpr uint64_t primary_caps = FI_MSG | FI_RMA | FI_TAGGED | FI_ATOMIC | FI_MULTICAST |
					 FI_NAMED_RX_CTX | FI_DIRECTED_RECV | FI_VARIABLE_MSG |
					 FI_HMEM | FI_COLLECTIVE | FI_XPU_TRIGGER;
inline constexpr uint64_t primary_modifiers = FI_READ | FI_WRITE | FI_RECV | FI_SEND |
					      FI_REMOTE_READ | FI_REMOTE_WRITE;
inline constexpr uint64_t secondary_caps = FI_MULTI_RECV | FI_SOURCE | FI_RMA_EVENT |
					   FI_SHARED_AV | FI_TRIGGER | FI_FENCE | FI_LOCAL_COMM |
					   FI_REMOTE_COMM | FI_SOURCE_ERR | FI_RMA_PMEM;

// The mr_mode bits that FI_MR_BASIC stood for before API 1.5.
inline constexpr int mr_basic_bits = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

// True when the provider's info satisfies every non-zero hint. Names (prov_name) are not
// checked here; see provider_names.h.
bool info_matches_hints(uint32_t version, const fi_info *info, const fi_info *hints);

// Caps as reported to an application asking for 'wanted': the asked primary caps (with all
// modifiers the provider offers when none were asked) plus the provider's secondary caps.
uint64_t narrow_caps(uint64_t offered, uint64_t wanted);

// Rewrites a matching info the way the application asked for it: narrowed caps, the chosen
// threading/progress/av type, mr_mode in the form the API version understands, api_version.
void narrow_info_to_hints(uint32_t version, fi_info *info, const fi_info *hints);

} // namespace ofi::core

#endif
