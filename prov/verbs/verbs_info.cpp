// The provider's getinfo: turns each usable device port into an fi_info, resolving
// node/service into FI_SOCKADDR_IN source and destination addresses.
#include <arpa/inet.h>
#include <netdb.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>

#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/rdma_cma.h>

#include "prov/verbs/verbs_cm_data.h"
#include "prov/verbs/verbs_discovery.h"
#include "prov/verbs/verbs_info.h"
#include "prov/verbs/verbs_provider.h"

namespace verbs {
namespace {

constexpr int kResolveTimeoutMs = 2000;

std::optional<struct sockaddr_in> resolve_ipv4(const char *node, const char *service, bool passive)
{
	struct addrinfo want {};
	want.ai_family = AF_INET;
	want.ai_socktype = SOCK_STREAM;
	if (passive)
		want.ai_flags = AI_PASSIVE;
	struct addrinfo *found = nullptr;
	if (getaddrinfo(node, service, &want, &found) != 0 || !found)
		return std::nullopt;
	struct sockaddr_in addr;
	std::memcpy(&addr, found->ai_addr, sizeof(addr));
	freeaddrinfo(found);
	return addr;
}

std::optional<struct sockaddr_in> ipv4_of(const void *addr, size_t len)
{
	if (!addr || len < sizeof(struct sockaddr_in))
		return std::nullopt;
	struct sockaddr_in in;
	std::memcpy(&in, addr, sizeof(in));
	if (in.sin_family != AF_INET)
		return std::nullopt;
	return in;
}

// Which device rdma_cm would use to reach dest (and from which local address).
struct Route {
	std::string device_name;
	struct sockaddr_in local;
};
std::optional<Route> route_to(const struct sockaddr_in &dest)
{
	struct rdma_cm_id *id = nullptr;
	if (rdma_create_id(nullptr, &id, nullptr, RDMA_PS_TCP) != 0)
		return std::nullopt;
	std::optional<Route> route;
	struct sockaddr_in target = dest;
	if (rdma_resolve_addr(id, nullptr, reinterpret_cast<struct sockaddr *>(&target),
			      kResolveTimeoutMs) == 0 && id->verbs) {
		Route r;
		r.device_name = ibv_get_device_name(id->verbs->device);
		std::memcpy(&r.local, rdma_get_local_addr(id), sizeof(r.local));
		r.local.sin_port = 0;
		route = r;
	}
	rdma_destroy_id(id);
	return route;
}

bool owns_address(const DevicePort &port, const struct sockaddr_in &addr)
{
	if (addr.sin_addr.s_addr == htonl(INADDR_ANY))
		return true;
	return std::any_of(port.addresses.begin(), port.addresses.end(),
			   [&](const struct sockaddr_in &a) { return a.sin_addr.s_addr == addr.sin_addr.s_addr; });
}

void *copy_address(const struct sockaddr_in &addr)
{
	void *copy = std::malloc(sizeof(addr));
	if (copy)
		std::memcpy(copy, &addr, sizeof(addr));
	return copy;
}

// The hints this provider must honour itself (address format, names, addresses); the
// core does the generic matching of capabilities and attributes.
bool hints_exclude(const struct fi_info *hints, const DevicePort &port)
{
	if (!hints)
		return false;
	if (hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_SOCKADDR &&
	    hints->addr_format != FI_SOCKADDR_IN)
		return true;
	if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC && hints->ep_attr->type != FI_EP_MSG)
		return true;
	if (hints->domain_attr && hints->domain_attr->name &&
	    port.device_name != hints->domain_attr->name)
		return true;
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    fabric_name_for(port.subnet_prefix) != hints->fabric_attr->name)
		return true;
	return false;
}

} // namespace

void fill_info_attributes(struct fi_info *info, const DevicePort &port, uint32_t version,
			  const struct fi_info *hints)
{
	const struct ibv_device_attr &dev = port.device_attr;
	const Params &p = params();
	info->caps = kVerbsCaps;
	info->mode = 0;
	info->addr_format = FI_SOCKADDR_IN;

	// Remote CQ data arrives in a posted receive: ask for FI_RX_CQ_DATA only from apps
	// that said they handle it, so apps not using it are not filtered out.
	uint64_t rx_mode = 0;
	if (!hints || (hints->mode & FI_RX_CQ_DATA) ||
	    (hints->rx_attr && (hints->rx_attr->mode & FI_RX_CQ_DATA)))
		rx_mode = FI_RX_CQ_DATA;

	struct fi_tx_attr *tx = info->tx_attr;
	tx->caps = kVerbsCaps & ~(FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE);
	tx->mode = 0;
	tx->op_flags = 0;
	tx->msg_order = kVerbsMsgOrder;
	tx->comp_order = FI_ORDER_STRICT;
	tx->inject_size = port.max_inline;
	tx->size = std::min<size_t>(p.tx_size, static_cast<size_t>(dev.max_qp_wr));
	tx->iov_limit = std::min<size_t>(p.tx_iov_limit, static_cast<size_t>(dev.max_sge));
	tx->rma_iov_limit = 1;

	struct fi_rx_attr *rx = info->rx_attr;
	rx->caps = kVerbsCaps & ~(FI_SEND | FI_READ | FI_WRITE);
	rx->mode = rx_mode;
	rx->op_flags = 0;
	rx->msg_order = kVerbsMsgOrder;
	rx->comp_order = FI_ORDER_STRICT;
	rx->total_buffered_recv = 0;
	rx->size = std::min<size_t>(p.rx_size, static_cast<size_t>(dev.max_qp_wr));
	rx->iov_limit = std::min<size_t>(p.rx_iov_limit, static_cast<size_t>(dev.max_sge));

	struct fi_ep_attr *ep = info->ep_attr;
	ep->type = FI_EP_MSG;
	ep->protocol = FI_PROTO_RDMA_CM_IB_RC;
	ep->protocol_version = 1;
	ep->max_msg_size = port.port_attr.max_msg_sz;
	ep->msg_prefix_size = 0;
	ep->max_order_raw_size = port.port_attr.max_msg_sz;
	ep->max_order_war_size = 0;
	ep->max_order_waw_size = port.port_attr.max_msg_sz;
	ep->mem_tag_format = 0;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 1;

	struct fi_domain_attr *domain = info->domain_attr;
	domain->name = strdup(port.device_name.c_str());
	domain->threading = FI_THREAD_SAFE;
	domain->control_progress = FI_PROGRESS_AUTO;
	domain->data_progress = FI_PROGRESS_AUTO;
	domain->resource_mgmt = (hints && hints->domain_attr &&
				 hints->domain_attr->resource_mgmt != FI_RM_UNSPEC)
					? hints->domain_attr->resource_mgmt
					: FI_RM_ENABLED;
	domain->av_type = FI_AV_UNSPEC;
	domain->mr_mode = version < FI_VERSION(1, 5) ? FI_MR_BASIC : kVerbsMrMode;
	domain->mr_key_size = sizeof(uint32_t);
	domain->cq_data_size = sizeof(uint32_t);
	domain->cq_cnt = static_cast<size_t>(dev.max_cq);
	domain->ep_cnt = static_cast<size_t>(dev.max_qp);
	domain->tx_ctx_cnt = static_cast<size_t>(dev.max_qp);
	domain->rx_ctx_cnt = static_cast<size_t>(dev.max_qp);
	domain->max_ep_tx_ctx = 1;
	domain->max_ep_rx_ctx = 1;
	domain->max_ep_stx_ctx = 0;
	domain->max_ep_srx_ctx = 1; // fi_srx_context: one SRQ per endpoint
	domain->cntr_cnt = 0;
	domain->mr_iov_limit = 1;
	domain->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
	domain->mode = 0;
	domain->max_err_data = kCmDataMax;
	domain->mr_cnt = static_cast<size_t>(dev.max_mr);

	struct fi_fabric_attr *fabric = info->fabric_attr;
	fabric->name = strdup(fabric_name_for(port.subnet_prefix).c_str());
	fabric->prov_name = strdup(kProviderName);
	fabric->prov_version = kProviderVersion;
	fabric->api_version = version;
}

int build_infos(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info)
{
	*info = nullptr;
	// What the caller names: a source (FI_SOURCE, or only a service), or a destination.
	std::optional<struct sockaddr_in> src, dest;
	if (node || service) {
		if ((flags & FI_SOURCE) || !node) {
			src = resolve_ipv4(node, service, true);
			if (!src)
				return -FI_ENODATA;
		} else {
			dest = resolve_ipv4(node, service, false);
			if (!dest)
				return -FI_ENODATA;
		}
	}
	// A source named by node/service with FI_SOURCE wins over the hints' (fi_getinfo(3):
	// hints->src_addr is ignored then), so its port is kept.
	if (hints && hints->src_addr && !src) {
		if (!(src = ipv4_of(hints->src_addr, hints->src_addrlen)))
			return -FI_ENODATA;
	}
	if (hints && hints->dest_addr && !dest) {
		if (!(dest = ipv4_of(hints->dest_addr, hints->dest_addrlen)))
			return -FI_ENODATA;
	}
	std::optional<Route> route;
	if (dest && !src) {
		route = route_to(*dest);
		if (!route)
			return -FI_ENODATA;
	}

	struct fi_info *head = nullptr, *tail = nullptr;
	for (const DevicePort &port : discover_device_ports()) {
		if (hints_exclude(hints, port))
			continue;
		struct sockaddr_in local = port.addresses.front();
		if (src) {
			if (!owns_address(port, *src))
				continue;
			local = *src;
			if (local.sin_addr.s_addr == htonl(INADDR_ANY))
				local.sin_addr = port.addresses.front().sin_addr;
		} else if (route) {
			if (route->device_name != port.device_name)
				continue;
			local = route->local;
		}
		struct fi_info *entry = fi_allocinfo();
		if (!entry) {
			fi_freeinfo(head);
			return -FI_ENOMEM;
		}
		fill_info_attributes(entry, port, version, hints);
		entry->src_addr = copy_address(local);
		entry->src_addrlen = sizeof(struct sockaddr_in);
		if (dest) {
			entry->dest_addr = copy_address(*dest);
			entry->dest_addrlen = sizeof(struct sockaddr_in);
		}
		if (!entry->src_addr || (dest && !entry->dest_addr) || !entry->domain_attr->name ||
		    !entry->fabric_attr->name || !entry->fabric_attr->prov_name) {
			fi_freeinfo(entry);
			fi_freeinfo(head);
			return -FI_ENOMEM;
		}
		if (tail)
			tail->next = entry;
		else
			head = entry;
		tail = entry;
	}
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}

} // namespace verbs
