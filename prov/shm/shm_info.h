// fi_getinfo for the shm provider: one info (fabric and domain "shm") for a node that is this
// host, with node/service and the hints' addresses turned into fi_shm:// addresses.
#ifndef PROV_SHM_SHM_INFO_H
#define PROV_SHM_SHM_INFO_H

#include <rdma/fabric.h>

namespace shm {

int get_infos(uint32_t version, const char *node, const char *service, uint64_t flags,
	      const struct fi_info *hints, struct fi_info **info);

inline constexpr uint64_t kTxCaps = FI_MSG | FI_SEND;
inline constexpr uint64_t kRxCaps = FI_MSG | FI_RECV;
// Same host only: FI_LOCAL_COMM, never FI_REMOTE_COMM.
inline constexpr uint64_t kDomainCaps = FI_LOCAL_COMM;
inline constexpr uint64_t kCaps = kTxCaps | kRxCaps | kDomainCaps;
inline constexpr uint64_t kMsgOrder = FI_ORDER_SAS;
inline constexpr char kFabricName[] = "shm";

} // namespace shm

#endif
