// Finding the RDMA devices usable here and describing each as an fi_info.
#ifndef OFI_PROV_VERBS_DISCOVERY_H
#define OFI_PROV_VERBS_DISCOVERY_H

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include <infiniband/verbs.h>
#include <rdma/fabric.h>

namespace verbs {

// One RDMA device port that is ACTIVE and has at least one IPv4 address on its netdev.
struct DevicePort {
	std::string device_name;
	uint8_t port_num = 0;
	struct ibv_device_attr device_attr {};
	struct ibv_port_attr port_attr {};
	uint64_t subnet_prefix = 0;       // host byte order
	size_t max_inline = 0;            // granted by a probe QP
	std::vector<struct sockaddr_in> addresses;
};

// Scanned once per process, on first use.
std::vector<DevicePort> discover_device_ports();

// "IB-0xfe80000000000000": the fabric is the IB/RoCE subnet, named by its GID prefix.
std::string fabric_name_for(uint64_t subnet_prefix);

// The provider's getinfo: one fi_info per usable device port matching node/service/hints.
int build_infos(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info);

} // namespace verbs

#endif
