// Translation between the RDM infos ofi_rxm reports and the MSG infos of its core provider.
#ifndef OFI_PROV_RXM_INFO_H
#define OFI_PROV_RXM_INFO_H

#include <rdma/fabric.h>

#include <string>

namespace rxm {

// Capabilities rxm implements on top of any MSG core.
constexpr uint64_t kRxmMsgCaps = FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV |
				 FI_SOURCE | FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM |
				 FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
// Added when the core offers RMA (passthrough to the peer's connection). Atomics are
// emulated with messages, so they need no core RMA.
constexpr uint64_t kRxmRmaCaps = FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;

int rxm_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info);

// The core part of a layered name: "tcp;ofi_rxm" and "ofi_rxm;tcp" give "tcp", "ofi_rxm"
// gives "" (any core). Returns false when the name cannot be served by rxm.
bool core_name_of(const char *layered, std::string *core);

// Asks the core for the MSG info behind an rxm info (same core, fabric, domain, address).
// Caller frees with fi_freeinfo. Returns nullptr if the core no longer offers it.
struct fi_info *core_info_for(const struct fi_info *rxm_info);

// Whether the core info offers what rxm's rendezvous and RMA need.
bool core_has_rma(const struct fi_info *core);

} // namespace rxm

#endif
