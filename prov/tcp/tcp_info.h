// fi_getinfo for the tcp provider: one fi_info per usable interface address, with node/service
// and hints' addresses resolved into src_addr/dest_addr.
#ifndef PROV_TCP_TCP_INFO_H
#define PROV_TCP_TCP_INFO_H

#include <rdma/fabric.h>

namespace tcp {

int get_infos(uint32_t version, const char *node, const char *service, uint64_t flags,
	      const struct fi_info *hints, struct fi_info **info);

// The capabilities and limits the provider really supports (shared with the objects' checks).
inline constexpr uint64_t kTxCaps = FI_MSG | FI_RMA | FI_READ | FI_WRITE | FI_SEND;
inline constexpr uint64_t kRxCaps = FI_MSG | FI_RMA | FI_RECV | FI_REMOTE_READ |
	FI_REMOTE_WRITE | FI_MULTI_RECV | FI_RMA_EVENT;
inline constexpr uint64_t kDomainCaps = FI_LOCAL_COMM | FI_REMOTE_COMM;
inline constexpr uint64_t kCaps = kTxCaps | kRxCaps | kDomainCaps;
// One stream processed in order gives these. Not WAR/SAR: a read response is sent from the
// registered memory after later operations may already have been placed.
inline constexpr uint64_t kMsgOrder = FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS |
	FI_ORDER_WAW | FI_ORDER_WAS | FI_ORDER_SAW | FI_ORDER_SAS;

} // namespace tcp

#endif
