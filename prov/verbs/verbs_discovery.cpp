// Device discovery: which RDMA devices have an active port and an IP address, and what
// their limits are. Addresses are matched to devices the way rdma_cm itself does it:
// binding a CM id to the address tells which device (and port) owns it.
#include "prov/verbs/verbs_discovery.h"

#include <arpa/inet.h>
#include <endian.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>

#include <rdma/rdma_cma.h>

#include "prov/verbs/verbs_provider.h"

namespace verbs {
namespace {

struct AddressOwner {
	std::string device_name;
	uint8_t port_num;
	struct sockaddr_in addr;
};

// Which device owns each IPv4 interface address (FI_VERBS_IFACE narrows the interfaces).
std::vector<AddressOwner> owners_of_local_addresses()
{
	std::vector<AddressOwner> owners;
	struct ifaddrs *list = nullptr;
	if (getifaddrs(&list) != 0)
		return owners;
	const std::string &iface = params().iface;
	for (struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || ifa->ifa_addr->sa_family != AF_INET)
			continue;
		if (!(ifa->ifa_flags & IFF_UP))
			continue;
		if (!iface.empty() && std::strncmp(ifa->ifa_name, iface.c_str(), iface.size()) != 0)
			continue;
		struct rdma_cm_id *id = nullptr;
		if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0)
			break;
		struct sockaddr_in addr;
		std::memcpy(&addr, ifa->ifa_addr, sizeof(addr));
		addr.sin_port = 0;
		if (rdma_bind_addr(id, reinterpret_cast<struct sockaddr *>(&addr)) == 0 && id->verbs)
			owners.push_back({ibv_get_device_name(id->verbs->device), id->port_num, addr});
		rdma_destroy_id(id);
	}
	freeifaddrs(list);
	return owners;
}

// The inline data limit is not in ibv_device_attr; ask a throw-away QP what it grants.
size_t probe_max_inline(struct ibv_context *context)
{
	size_t granted = 0;
	struct ibv_pd *pd = ibv_alloc_pd(context);
	struct ibv_cq *cq = pd ? ibv_create_cq(context, 1, nullptr, nullptr, 0) : nullptr;
	for (size_t ask = params().inline_size; cq; ask /= 2) {
		struct ibv_qp_init_attr attr {};
		attr.send_cq = cq;
		attr.recv_cq = cq;
		attr.qp_type = IBV_QPT_RC;
		attr.cap.max_send_wr = 1;
		attr.cap.max_recv_wr = 1;
		attr.cap.max_send_sge = 1;
		attr.cap.max_recv_sge = 1;
		attr.cap.max_inline_data = static_cast<uint32_t>(ask);
		if (struct ibv_qp *qp = ibv_create_qp(pd, &attr)) {
			granted = attr.cap.max_inline_data;
			ibv_destroy_qp(qp);
			break;
		}
		if (ask == 0)
			break;
	}
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return granted;
}

} // namespace

std::string fabric_name_for(uint64_t subnet_prefix)
{
	char name[32];
	std::snprintf(name, sizeof(name), "IB-0x%016" PRIx64, subnet_prefix);
	return name;
}

namespace {

std::vector<DevicePort> scan_device_ports()
{
	std::vector<DevicePort> ports;
	int count = 0;
	struct ibv_context **contexts = rdma_get_devices(&count);
	if (!contexts)
		return ports;
	std::vector<AddressOwner> owners = count > 0 ? owners_of_local_addresses()
						     : std::vector<AddressOwner>{};
	for (int i = 0; i < count; i++) {
		struct ibv_context *context = contexts[i];
		const char *name = ibv_get_device_name(context->device);
		if (!params().device_name.empty() && params().device_name != name)
			continue;
		struct ibv_device_attr device_attr;
		if (ibv_query_device(context, &device_attr) != 0)
			continue;
		for (uint8_t port = 1; port <= device_attr.phys_port_cnt; port++) {
			DevicePort entry;
			if (ibv_query_port(context, port, &entry.port_attr) != 0 ||
			    entry.port_attr.state != IBV_PORT_ACTIVE)
				continue;
			for (const AddressOwner &owner : owners)
				if (owner.device_name == name && owner.port_num == port)
					entry.addresses.push_back(owner.addr);
			if (entry.addresses.empty())
				continue;
			union ibv_gid gid;
			if (ibv_query_gid(context, port, params().gid_idx, &gid) != 0)
				continue;
			entry.device_name = name;
			entry.port_num = port;
			entry.device_attr = device_attr;
			entry.subnet_prefix = be64toh(gid.global.subnet_prefix);
			entry.max_inline = probe_max_inline(context);
			ports.push_back(std::move(entry));
		}
	}
	rdma_free_devices(contexts);
	return ports;
}

} // namespace

std::vector<DevicePort> discover_device_ports()
{
	// Scanning opens every device and creates a probe QP: slow enough (seconds under
	// emulation) that doing it on every fi_getinfo would dominate applications that call
	// it often. Devices and their addresses are taken as fixed for the life of the process.
	static std::mutex lock;
	static std::optional<std::vector<DevicePort>> cache;
	std::lock_guard<std::mutex> guard(lock);
	if (!cache)
		cache = scan_device_ports();
	return *cache;
}

} // namespace verbs
