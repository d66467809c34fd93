// fi_info layouts of the older ABI versions (facts of libfabric's ABI history). Every later
// version only appended fields, so each old struct is a prefix of the current one.
//  - ABI 1.0: no fi_info.nic, no fi_tx_attr.tclass, no fi_ep_attr.auth_key*, fi_domain_attr
//    ends after max_ep_srx_ctx, no fi_fabric_attr.api_version.
//  - ABI 1.1: attribute structs as today, fi_info still without nic.
//  - ABI 1.2: fi_info as today.
#ifndef OFI_SRC_COMPAT_LAYOUTS_H
#define OFI_SRC_COMPAT_LAYOUTS_H

#include <rdma/fabric.h>

#include <cstddef>

namespace ofi::core::abi_1_0 {

struct fi_tx_attr {
	uint64_t caps;
	uint64_t mode;
	uint64_t op_flags;
	uint64_t msg_order;
	uint64_t comp_order;
	size_t inject_size;
	size_t size;
	size_t iov_limit;
	size_t rma_iov_limit;
};

// fi_rx_attr has not changed since ABI 1.0.

struct fi_ep_attr {
	enum fi_ep_type type;
	uint32_t protocol;
	uint32_t protocol_version;
	size_t max_msg_size;
	size_t msg_prefix_size;
	size_t max_order_raw_size;
	size_t max_order_war_size;
	size_t max_order_waw_size;
	uint64_t mem_tag_format;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
};

struct fi_domain_attr {
	struct fid_domain *domain;
	char *name;
	enum fi_threading threading;
	enum fi_progress control_progress;
	enum fi_progress data_progress;
	enum fi_resource_mgmt resource_mgmt;
	enum fi_av_type av_type;
	int mr_mode;
	size_t mr_key_size;
	size_t cq_data_size;
	size_t cq_cnt;
	size_t ep_cnt;
	size_t tx_ctx_cnt;
	size_t rx_ctx_cnt;
	size_t max_ep_tx_ctx;
	size_t max_ep_rx_ctx;
	size_t max_ep_stx_ctx;
	size_t max_ep_srx_ctx;
};

struct fi_fabric_attr {
	struct fid_fabric *fabric;
	char *name;
	char *prov_name;
	uint32_t prov_version;
};

struct fi_info {
	struct fi_info *next;
	uint64_t caps;
	uint64_t mode;
	uint32_t addr_format;
	size_t src_addrlen;
	size_t dest_addrlen;
	void *src_addr;
	void *dest_addr;
	fid_t handle;
	struct fi_tx_attr *tx_attr;
	::fi_rx_attr *rx_attr;
	struct fi_ep_attr *ep_attr;
	struct fi_domain_attr *domain_attr;
	struct fi_fabric_attr *fabric_attr;
};

static_assert(sizeof(fi_tx_attr) == 0x48);
static_assert(sizeof(fi_ep_attr) == 0x50);
static_assert(sizeof(fi_domain_attr) == 0x78);
static_assert(sizeof(fi_fabric_attr) == 0x20);
static_assert(sizeof(fi_info) == 0x70);
static_assert(offsetof(::fi_info, nic) == sizeof(fi_info));

} // namespace ofi::core::abi_1_0

namespace ofi::core::abi_1_1 {
// Same attribute structs as today; fi_info lacks only the trailing nic pointer.
inline constexpr size_t fi_info_size = offsetof(::fi_info, nic);
} // namespace ofi::core::abi_1_1

#endif
