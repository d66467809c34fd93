// What the verbs provider offers, shared by getinfo and the objects that check requests.
#ifndef OFI_PROV_VERBS_INFO_H
#define OFI_PROV_VERBS_INFO_H

#include <rdma/fabric.h>

#include "prov/verbs/verbs_discovery.h"

namespace verbs {

inline constexpr uint64_t kVerbsCaps = FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				       FI_REMOTE_READ | FI_REMOTE_WRITE | FI_LOCAL_COMM |
				       FI_REMOTE_COMM;
inline constexpr uint64_t kVerbsMsgOrder = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS |
					   FI_ORDER_WAW | FI_ORDER_WAS | FI_ORDER_SAW |
					   FI_ORDER_SAS;
inline constexpr int kVerbsMrMode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				    FI_MR_PROV_KEY;

// Fills every attribute of a freshly allocated info except the addresses.
void fill_info_attributes(struct fi_info *info, const DevicePort &port, uint32_t version,
			  const struct fi_info *hints);

} // namespace verbs

#endif
