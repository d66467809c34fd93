#include "prov/tcp/tcp_info.h"

#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_interfaces.h"
#include "prov/tcp/tcp_passive_endpoint.h"
#include "prov/tcp/tcp_provider.h"
#include "prov/util/error.h"
#include "prov/util/info_util.h"

#include <netdb.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace tcp {
namespace {

// Addresses given by node/service or the hints, before they are paired with interfaces.
struct Endpoints {
	std::vector<sockaddr_storage> src;   // empty = any interface address, port 0
	std::vector<sockaddr_storage> dest;  // empty = no destination
};

bool family_allowed(uint32_t format, int family)
{
	switch (format) {
	case FI_FORMAT_UNSPEC:
	case FI_SOCKADDR:
		return true;
	case FI_SOCKADDR_IN:
		return family == AF_INET;
	case FI_SOCKADDR_IN6:
		return family == AF_INET6;
	default:
		return false;
	}
}

int copy_hint_addr(const void *addr, size_t len, std::vector<sockaddr_storage> *out)
{
	if (!addr)
		return 0;
	auto *sa = static_cast<const sockaddr *>(addr);
	socklen_t expected = len >= sizeof(sa_family_t) ? sockaddr_length(sa) : 0;
	if (expected == 0 || len < expected)
		return -FI_ENODATA;
	sockaddr_storage ss{};
	memcpy(&ss, sa, expected);
	out->push_back(ss);
	return 0;
}

int resolve(const char *node, const char *service, bool passive, uint32_t format,
	    std::vector<sockaddr_storage> *out)
{
	addrinfo hints{};
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_family = format == FI_SOCKADDR_IN ? AF_INET
			  : format == FI_SOCKADDR_IN6 ? AF_INET6 : AF_UNSPEC;
	if (passive)
		hints.ai_flags = AI_PASSIVE;
	addrinfo *list = nullptr;
	if (getaddrinfo(node, service, &hints, &list) != 0) {
		FI_INFO(&provider, FI_LOG_CORE, "cannot resolve %s:%s\n", node ? node : "",
			service ? service : "");
		return -FI_ENODATA;
	}
	for (addrinfo *ai = list; ai; ai = ai->ai_next) {
		if (!sockaddr_length(ai->ai_addr))
			continue;
		sockaddr_storage ss{};
		memcpy(&ss, ai->ai_addr, sockaddr_length(ai->ai_addr));
		out->push_back(ss);
	}
	freeaddrinfo(list);
	return out->empty() ? -FI_ENODATA : 0;
}

void *dup_addr(const sockaddr_storage &ss, size_t *len)
{
	*len = sockaddr_length(reinterpret_cast<const sockaddr *>(&ss));
	void *copy = malloc(*len);
	if (copy)
		memcpy(copy, &ss, *len);
	return copy;
}

void free_one(fi_info *fi)
{
	free(fi->src_addr);
	free(fi->dest_addr);
	free(fi->tx_attr);
	free(fi->rx_attr);
	if (fi->ep_attr)
		free(fi->ep_attr->auth_key);
	free(fi->ep_attr);
	if (fi->domain_attr) {
		free(fi->domain_attr->name);
		free(fi->domain_attr->auth_key);
	}
	free(fi->domain_attr);
	if (fi->fabric_attr) {
		free(fi->fabric_attr->name);
		free(fi->fabric_attr->prov_name);
	}
	free(fi->fabric_attr);
	free(fi);
}

void free_list(fi_info *fi)
{
	while (fi) {
		fi_info *next = fi->next;
		free_one(fi);
		fi = next;
	}
}

fi_info *make_info(uint32_t version, const Interface &iface, const sockaddr_storage *src,
		   const sockaddr_storage *dest, const fi_info *hints)
{
	fi_info *fi = static_cast<fi_info *>(calloc(1, sizeof(fi_info)));
	if (!fi)
		return nullptr;
	fi->tx_attr = static_cast<fi_tx_attr *>(calloc(1, sizeof(fi_tx_attr)));
	fi->rx_attr = static_cast<fi_rx_attr *>(calloc(1, sizeof(fi_rx_attr)));
	fi->ep_attr = static_cast<fi_ep_attr *>(calloc(1, sizeof(fi_ep_attr)));
	fi->domain_attr = static_cast<fi_domain_attr *>(calloc(1, sizeof(fi_domain_attr)));
	fi->fabric_attr = static_cast<fi_fabric_attr *>(calloc(1, sizeof(fi_fabric_attr)));
	if (!fi->tx_attr || !fi->rx_attr || !fi->ep_attr || !fi->domain_attr || !fi->fabric_attr) {
		free_one(fi);
		return nullptr;
	}
	const Settings &s = settings();
	int family = src ? src->ss_family : dest ? dest->ss_family : iface.addr.ss_family;
	bool generic = hints && hints->addr_format == FI_SOCKADDR;
	fi->caps = kCaps;
	fi->mode = 0;
	fi->addr_format = generic ? FI_SOCKADDR
				  : family == AF_INET ? FI_SOCKADDR_IN : FI_SOCKADDR_IN6;
	sockaddr_storage local = iface.addr;
	if (src) {
		local = *src;
		if (is_wildcard_ip(reinterpret_cast<const sockaddr *>(src))) {
			uint16_t port = sockaddr_port(reinterpret_cast<const sockaddr *>(src));
			local = iface.addr;
			set_sockaddr_port(reinterpret_cast<sockaddr *>(&local), port);
		}
	}
	fi->src_addr = dup_addr(local, &fi->src_addrlen);
	if (dest)
		fi->dest_addr = dup_addr(*dest, &fi->dest_addrlen);

	fi_tx_attr *tx = fi->tx_attr;
	tx->caps = kTxCaps;
	tx->msg_order = kMsgOrder;
	tx->comp_order = FI_ORDER_NONE;
	tx->inject_size = s.max_inject;
	tx->size = s.tx_size;
	tx->iov_limit = kIovLimit;
	tx->rma_iov_limit = kRmaIovLimit;

	fi_rx_attr *rx = fi->rx_attr;
	rx->caps = kRxCaps;
	rx->msg_order = kMsgOrder;
	rx->comp_order = FI_ORDER_NONE;
	rx->size = s.rx_size;
	rx->iov_limit = kIovLimit;

	fi_ep_attr *ep = fi->ep_attr;
	ep->type = FI_EP_MSG;
	ep->protocol = FI_PROTO_SOCK_TCP;
	ep->protocol_version = 1;
	ep->max_msg_size = SIZE_MAX;
	ep->max_order_raw_size = SIZE_MAX;
	ep->max_order_war_size = 0;
	ep->max_order_waw_size = SIZE_MAX;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 1;

	fi_domain_attr *dom = fi->domain_attr;
	dom->name = strdup(iface.name.c_str());
	dom->threading = FI_THREAD_SAFE;
	dom->control_progress = util::progress_asked(hints, false);
	dom->data_progress = util::progress_asked(hints, true);
	dom->resource_mgmt = FI_RM_ENABLED;
	dom->av_type = FI_AV_UNSPEC;
	dom->mr_mode = util::offset_mr_mode_for(hints);
	dom->mr_key_size = sizeof(uint64_t);
	dom->cq_data_size = sizeof(uint64_t);
	dom->cq_cnt = 256;
	dom->ep_cnt = 8192;
	dom->tx_ctx_cnt = 8192;
	dom->rx_ctx_cnt = 8192;
	dom->max_ep_tx_ctx = 1;
	dom->max_ep_rx_ctx = 1;
	// An endpoint may take its receives from one shared context (fi_srx_context); tcp has no
	// shared transmit contexts, so hints asking for one find nothing.
	dom->max_ep_stx_ctx = 0;
	dom->max_ep_srx_ctx = 1;
	dom->cntr_cnt = 0;
	dom->mr_iov_limit = 1;
	dom->caps = kDomainCaps;
	dom->mr_cnt = 1 << 16;
	// Authorization keys (fi_domain(3)): connections present the key and a listener refuses
	// another before any data moves. The application's keys come back in the info.
	if (hints && hints->domain_attr && hints->domain_attr->auth_key_size) {
		dom->auth_key = static_cast<uint8_t *>(malloc(hints->domain_attr->auth_key_size));
		if (!dom->auth_key) {
			free_one(fi);
			return nullptr;
		}
		memcpy(dom->auth_key, hints->domain_attr->auth_key, hints->domain_attr->auth_key_size);
		dom->auth_key_size = hints->domain_attr->auth_key_size;
	}
	if (hints && hints->ep_attr && hints->ep_attr->auth_key_size) {
		fi->ep_attr->auth_key = static_cast<uint8_t *>(malloc(hints->ep_attr->auth_key_size));
		if (!fi->ep_attr->auth_key) {
			free_one(fi);
			return nullptr;
		}
		memcpy(fi->ep_attr->auth_key, hints->ep_attr->auth_key, hints->ep_attr->auth_key_size);
		fi->ep_attr->auth_key_size = hints->ep_attr->auth_key_size;
	}

	fi_fabric_attr *fab = fi->fabric_attr;
	fab->name = strdup(iface.subnet.c_str());
	fab->prov_name = strdup(provider.name);
	fab->prov_version = kProviderVersion;
	fab->api_version = version;
	if (!dom->name || !fab->name || !fab->prov_name || !fi->src_addr ||
	    (dest && !fi->dest_addr)) {
		free_one(fi);
		return nullptr;
	}
	return fi;
}

bool names_match(const Interface &iface, const fi_info *hints)
{
	if (!hints)
		return true;
	if (hints->domain_attr && hints->domain_attr->name &&
	    iface.name != hints->domain_attr->name)
		return false;
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    iface.subnet != hints->fabric_attr->name)
		return false;
	return true;
}

// How well an interface suits a destination: its own address or the loopback device for a
// loopback destination first, so the first info is the natural route.
int route_rank(const Interface &iface, const sockaddr_storage *dest)
{
	if (!dest)
		return 0;
	auto *d = reinterpret_cast<const sockaddr *>(dest);
	auto *a = reinterpret_cast<const sockaddr *>(&iface.addr);
	if (same_ip(a, d) || (is_loopback_ip(d) && iface.loopback))
		return 0;
	return 1;
}

} // namespace

int get_infos(uint32_t version, const char *node, const char *service, uint64_t flags,
	      const struct fi_info *hints, struct fi_info **info)
{
	*info = nullptr;
	uint32_t format = hints ? hints->addr_format : static_cast<uint32_t>(FI_FORMAT_UNSPEC);
	if (!family_allowed(format, AF_INET) && !family_allowed(format, AF_INET6))
		return -FI_ENODATA;
	if (hints && hints->ep_attr && util::raw_enum(hints->ep_attr->type) != FI_EP_UNSPEC &&
	    util::raw_enum(hints->ep_attr->type) != FI_EP_MSG)
		return -FI_ENODATA;
	// Keys longer than a connection request carries (or announced without bytes) are refused.
	for (auto [key, size] : {std::pair{hints && hints->domain_attr ? hints->domain_attr->auth_key
								     : nullptr,
					   hints && hints->domain_attr ? hints->domain_attr->auth_key_size
								     : 0},
				 std::pair{hints && hints->ep_attr ? hints->ep_attr->auth_key : nullptr,
					   hints && hints->ep_attr ? hints->ep_attr->auth_key_size : 0}})
		if (size > kMaxAuthKey || (size && !key))
			return -FI_ENODATA;

	Endpoints where;
	int ret = 0;
	// fi_getinfo(3): with a passive endpoint as hints->handle, the infos describe an active
	// endpoint that takes over its address (and carry the handle to fi_endpoint).
	TcpPassiveEndpoint *pep = nullptr;
	if (hints && hints->handle) {
		if (hints->handle->fclass != FI_CLASS_PEP)
			return -FI_ENODATA;
		pep = util::fid_cast<TcpPassiveEndpoint>(hints->handle, FI_CLASS_PEP);
		if (!pep)
			return -FI_ENODATA; // another provider's passive endpoint
		sockaddr_storage addr{};
		size_t len = sizeof(addr);
		if (pep->getname(&addr, &len))
			return -FI_ENODATA;
		where.src.push_back(addr);
	}
	if (hints && !pep) {
		ret = copy_hint_addr(hints->src_addr, hints->src_addrlen, &where.src);
		if (!ret)
			ret = copy_hint_addr(hints->dest_addr, hints->dest_addrlen, &where.dest);
		if (ret)
			return ret;
	}
	if (node || service) {
		bool source = (flags & FI_SOURCE) != 0;
		std::vector<sockaddr_storage> resolved;
		ret = resolve(node, service, source && !node, format, &resolved);
		if (ret)
			return ret;
		(source ? where.src : where.dest) = std::move(resolved);
	}

	std::vector<Interface> ifaces = list_interfaces(settings().iface);
	std::vector<const sockaddr_storage *> srcs, dests;
	for (auto &s : where.src)
		srcs.push_back(&s);
	for (auto &d : where.dest)
		dests.push_back(&d);
	if (srcs.empty())
		srcs.push_back(nullptr);
	if (dests.empty())
		dests.push_back(nullptr);

	fi_info *head = nullptr, **tail = &head;
	for (const sockaddr_storage *dest : dests) {
		for (int rank = 0; rank < 2; rank++) {
			for (const Interface &iface : ifaces) {
				if (route_rank(iface, dest) != rank || !names_match(iface, hints))
					continue;
				int family = iface.addr.ss_family;
				if (!family_allowed(format, family) ||
				    (dest && dest->ss_family != family))
					continue;
				for (const sockaddr_storage *src : srcs) {
					auto *sa = reinterpret_cast<const sockaddr *>(src);
					if (src && (src->ss_family != family ||
						    (!is_wildcard_ip(sa) &&
						     !same_ip(sa, reinterpret_cast<const sockaddr *>(
								 &iface.addr)))))
						continue;
					fi_info *fi = make_info(version, iface, src, dest, hints);
					if (!fi) {
						free_list(head);
						return -FI_ENOMEM;
					}
					if (pep)
						fi->handle = hints->handle;
					*tail = fi;
					tail = &fi->next;
				}
			}
		}
	}
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}

} // namespace tcp
