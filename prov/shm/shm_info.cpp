#include "prov/shm/shm_info.h"

#include "prov/shm/shm_address.h"
#include "prov/shm/shm_passive_endpoint.h"
#include "prov/shm/shm_provider.h"
#include "prov/shm/shm_ring.h"
#include "prov/util/error.h"
#include "prov/util/info_util.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace shm {
namespace {

// A node names this host when one of its addresses can be bound here (loopback or one of
// our interfaces). Other hosts are not reachable through shared memory.
bool node_is_local(const char *node)
{
	ShmAddress ignored;
	if (parse_address(node, strlen(node) + 1, &ignored))
		return true;
	addrinfo hints{};
	hints.ai_socktype = SOCK_DGRAM;
	addrinfo *list = nullptr;
	if (getaddrinfo(node, nullptr, &hints, &list) != 0)
		return false;
	bool local = false;
	for (addrinfo *ai = list; ai && !local; ai = ai->ai_next) {
		int s = socket(ai->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (s < 0)
			continue;
		local = bind(s, ai->ai_addr, ai->ai_addrlen) == 0;
		close(s);
	}
	freeaddrinfo(list);
	return local;
}

// node/service as an address: a node that is itself an fi_shm:// address wins, otherwise the
// service names the listener ("0" or none: any name).
bool address_from(const char *node, const char *service, ShmAddress *out)
{
	if (node && parse_address(node, strlen(node) + 1, out))
		return true;
	return address_for_service(service ? service : "0", out);
}

void *dup_address(const ShmAddress &a)
{
	void *copy = malloc(kAddrLen);
	if (copy)
		memcpy(copy, a.text, kAddrLen);
	return copy;
}

fi_info *make_info(uint32_t version, const ShmAddress &src, const ShmAddress *dest,
		   const fi_info *hints)
{
	fi_info *fi = fi_allocinfo();
	if (!fi)
		return nullptr;
	const Settings &s = settings();
	fi->caps = kCaps;
	fi->addr_format = FI_ADDR_STR;
	fi->src_addr = dup_address(src);
	fi->src_addrlen = fi->src_addr ? kAddrLen : 0;
	if (dest) {
		fi->dest_addr = dup_address(*dest);
		fi->dest_addrlen = fi->dest_addr ? kAddrLen : 0;
	}
	fi_tx_attr *tx = fi->tx_attr;
	tx->caps = kTxCaps;
	tx->msg_order = kMsgOrder;
	tx->comp_order = FI_ORDER_NONE;
	tx->inject_size = kSlotPayload;
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
	ep->protocol = FI_PROTO_SHM;
	ep->protocol_version = 1;
	ep->max_msg_size = kMaxMsgSize;
	ep->max_order_raw_size = kMaxMsgSize;
	ep->max_order_war_size = 0;
	ep->max_order_waw_size = kMaxMsgSize;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 1;
	fi_domain_attr *dom = fi->domain_attr;
	dom->name = strdup(kFabricName);
	dom->threading = FI_THREAD_SAFE;
	dom->control_progress = util::progress_asked(hints, false);
	dom->data_progress = util::progress_asked(hints, true);
	dom->resource_mgmt = FI_RM_ENABLED;
	dom->av_type = FI_AV_UNSPEC;
	dom->mr_mode = util::offset_mr_mode_for(hints);
	dom->mr_key_size = sizeof(uint64_t);
	dom->cq_data_size = sizeof(uint64_t);
	dom->cq_cnt = 256;
	dom->ep_cnt = 1024;
	dom->tx_ctx_cnt = 1024;
	dom->rx_ctx_cnt = 1024;
	dom->max_ep_tx_ctx = 1;
	dom->max_ep_rx_ctx = 1;
	dom->mr_iov_limit = 1;
	dom->caps = kDomainCaps;
	dom->mr_cnt = 1 << 16;
	fi_fabric_attr *fab = fi->fabric_attr;
	fab->name = strdup(kFabricName);
	fab->prov_name = strdup(provider.name);
	fab->prov_version = kProviderVersion;
	fab->api_version = version;
	if (!dom->name || !fab->name || !fab->prov_name || !fi->src_addr ||
	    (dest && !fi->dest_addr)) {
		fi_freeinfo(fi);
		return nullptr;
	}
	return fi;
}

} // namespace

int get_infos(uint32_t version, const char *node, const char *service, uint64_t flags,
	      const struct fi_info *hints, struct fi_info **info)
{
	*info = nullptr;
	if (hints && hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_ADDR_STR)
		return -FI_ENODATA;
	if (hints && hints->ep_attr && util::raw_enum(hints->ep_attr->type) != FI_EP_UNSPEC &&
	    util::raw_enum(hints->ep_attr->type) != FI_EP_MSG)
		return -FI_ENODATA;
	// Authorization keys are not implemented: never pretend to honour one.
	if (hints && ((hints->domain_attr && hints->domain_attr->auth_key_size) ||
		      (hints->ep_attr && hints->ep_attr->auth_key_size)))
		return -FI_ENODATA;
	ShmAddress src, dest;
	address_for_service("0", &src);
	bool have_dest = false;
	ShmPassiveEndpoint *pep = nullptr;
	if (hints && hints->handle) {
		pep = hints->handle->fclass == FI_CLASS_PEP
			      ? util::fid_cast<ShmPassiveEndpoint>(hints->handle, FI_CLASS_PEP)
			      : nullptr;
		if (!pep)
			return -FI_ENODATA;
		src = pep->address();
	} else if (hints) {
		if (hints->src_addr && !parse_address(hints->src_addr, hints->src_addrlen, &src))
			return -FI_ENODATA;
		if (hints->dest_addr) {
			if (!parse_address(hints->dest_addr, hints->dest_addrlen, &dest))
				return -FI_ENODATA;
			have_dest = true;
		}
	}
	if (node && !node_is_local(node))
		return -FI_ENODATA;
	if (node || service) {
		ShmAddress named;
		if (!address_from(node, service, &named))
			return -FI_ENODATA;
		if (flags & FI_SOURCE) {
			src = named;
		} else {
			dest = named;
			have_dest = true;
		}
	}
	fi_info *fi = make_info(version, src, have_dest ? &dest : nullptr, hints);
	if (!fi)
		return -FI_ENOMEM;
	if (pep)
		fi->handle = hints->handle;
	*info = fi;
	return 0;
}

} // namespace shm
