// fi_getinfo for the shm provider: one info (fabric and domain "shm") for a node that is this
// host, with node/service and the hints' addresses turned into fi_shm:// addresses.
#ifndef PROV_SHM_SHM_INFO_H
#define PROV_SHM_SHM_INFO_H

#include <rdma/fabric.h>

namespace shm {

int get_infos(uint32_t version, const char *node, const char *service, uint64_t flags,
	      const struct fi_info *hints, struct fi_info **info);

inline constexpr uint64_t kTxCaps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_SEND;
inline constexpr uint64_t kRxCaps = FI_MSG | FI_RMA | FI_RECV | FI_REMOTE_READ |
	FI_REMOTE_WRITE | FI_RMA_EVENT;
// Same host only: FI_LOCAL_COMM, never FI_REMOTE_COMM.
inline constexpr uint64_t kDomainCaps = FI_LOCAL_COMM;
inline constexpr uint64_t kCaps = kTxCaps | kRxCaps | kDomainCaps;
// Both rings are processed in order. Not WAR/SAR: a read response is copied out of the
// registered memory after later operations may already have been placed.
inline constexpr uint64_t kMsgOrder = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS |
	FI_ORDER_WAW | FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS;
inline constexpr char kFabricName[] = "shm";

} // namespace shm

#endif
