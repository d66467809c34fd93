// getinfo for ofi_rxm: asks the core provider(s) for MSG endpoints through the public
// fi_getinfo and turns each answer into the RDM info rxm builds on it.
#include "prov/rxm/rxm_info.h"

#include "prov/rxm/rxm_provider.h"
#include "prov/rxm/rxm_wire.h"
#include "prov/util/error.h"
#include "prov/util/mr_map.h"

#include <rdma/fi_errno.h>

#include <cstdlib>
#include <cstring>

namespace rxm {

namespace {

bool is_utility(const std::string &name) { return name.compare(0, 4, "ofi_") == 0; }

char *dup_or_null(const char *s) { return s ? strdup(s) : nullptr; }

void *dup_bytes(const void *p, size_t len)
{
	if (!p || !len)
		return nullptr;
	void *copy = malloc(len);
	if (copy)
		memcpy(copy, p, len);
	return copy;
}

// Copies an authorization key (fi_domain(3) auth_key) into 'to': rxm's connections are the
// core's, so the core presents and checks the key.
void copy_auth_key(const fi_domain_attr *from, fi_domain_attr *to)
{
	if (!from || !from->auth_key || !from->auth_key_size)
		return;
	to->auth_key = static_cast<uint8_t *>(dup_bytes(from->auth_key, from->auth_key_size));
	to->auth_key_size = to->auth_key ? from->auth_key_size : 0;
}

// MSG hints that ask the core for what rxm needs: any MSG endpoint of the named core on the
// same fabric/domain/address as the application asked for. Caps stay 0 so the core reports
// everything it has (rxm decides what to use, e.g. RMA for rendezvous).
fi_info *core_hints(const fi_info *hints, const std::string &core)
{
	fi_info *h = fi_allocinfo();
	if (!h)
		return nullptr;
	h->ep_attr->type = FI_EP_MSG;
	// FI_RX_CQ_DATA: rxm can take a core receive buffer being consumed by a peer's write with
	// remote CQ data (verbs needs it for write-with-immediate; tcp ignores it).
	h->mode = FI_CONTEXT | FI_CONTEXT2 | FI_RX_CQ_DATA;
	h->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (!core.empty())
		h->fabric_attr->prov_name = strdup(core.c_str());
	if (hints) {
		h->addr_format = hints->addr_format;
		if (hints->src_addr) {
			h->src_addr = dup_bytes(hints->src_addr, hints->src_addrlen);
			h->src_addrlen = h->src_addr ? hints->src_addrlen : 0;
		}
		if (hints->dest_addr) {
			h->dest_addr = dup_bytes(hints->dest_addr, hints->dest_addrlen);
			h->dest_addrlen = h->dest_addr ? hints->dest_addrlen : 0;
		}
		if (hints->domain_attr && hints->domain_attr->name)
			h->domain_attr->name = strdup(hints->domain_attr->name);
		if (hints->fabric_attr && hints->fabric_attr->name)
			h->fabric_attr->name = strdup(hints->fabric_attr->name);
		copy_auth_key(hints->domain_attr, h->domain_attr);
		// rxm handles FI_MR_LOCAL itself; the remote-side rules reach the application, so
		// the core may only impose those the application accepts.
		if (hints->domain_attr) {
			int app = hints->domain_attr->mr_mode;
			// A legacy FI_MR_BASIC request goes down as such, so the core gives
			// BASIC's semantics (virtual addresses), not just what the bits allow.
			int legacy_basic = (app & FI_MR_BASIC) ? FI_MR_BASIC : 0;
			if (app & FI_MR_BASIC)
				app = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
			else if (app == FI_MR_SCALABLE)
				app = 0;
			h->domain_attr->mr_mode = FI_MR_LOCAL | legacy_basic |
				(app & (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY));
		}
	}
	return h;
}

// The RDM info rxm offers on top of one core MSG info.
fi_info *rdm_info_from_core(const fi_info *core)
{
	const RxmParams &p = params();
	fi_info *info = fi_allocinfo();
	if (!info)
		return nullptr;
	uint64_t caps = kRxmMsgCaps;
	if (core_has_rma(core))
		caps |= kRxmRmaCaps;
	// Remote-side counters: rxm counts the emulated atomics it runs and adds what the
	// core's counters count of the RMA its connections take; without them it cannot.
	if (core_has_rma(core) && (core->caps & FI_RMA_EVENT))
		caps |= FI_RMA_EVENT;
	// Collectives (rxm_coll.h) need only messages, which every core carries. A primary cap:
	// the core's narrowing reports it only to applications that ask for it.
	caps |= FI_COLLECTIVE;
	info->caps = caps;
	info->mode = 0;
	info->addr_format = core->addr_format;
	if (core->src_addr) {
		info->src_addr = dup_bytes(core->src_addr, core->src_addrlen);
		info->src_addrlen = info->src_addr ? core->src_addrlen : 0;
	}
	if (core->dest_addr) {
		info->dest_addr = dup_bytes(core->dest_addr, core->dest_addrlen);
		info->dest_addrlen = info->dest_addr ? core->dest_addrlen : 0;
	}

	uint64_t order = FI_ORDER_SAS;
	fi_tx_attr *tx = info->tx_attr;
	tx->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_SEND |
			   FI_COLLECTIVE);
	tx->msg_order = order;
	tx->comp_order = FI_ORDER_NONE;
	tx->inject_size = p.buffer_size;
	tx->size = p.tx_size;
	tx->iov_limit = kRndvMaxSegments;
	tx->rma_iov_limit = core_has_rma(core) ? 1 : 0;

	fi_rx_attr *rx = info->rx_attr;
	rx->caps = caps & (FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | FI_REMOTE_READ |
			   FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV |
			   FI_RMA_EVENT | FI_COLLECTIVE);
	rx->msg_order = order;
	rx->comp_order = FI_ORDER_NONE;
	rx->size = p.rx_size;
	rx->iov_limit = kRndvMaxSegments;

	fi_ep_attr *ep = info->ep_attr;
	ep->type = FI_EP_RDM;
	ep->protocol = FI_PROTO_RXM;
	ep->protocol_version = kWireVersion;
	ep->max_msg_size = core_has_rma(core) ? SIZE_MAX : core->ep_attr->max_msg_size;
	ep->mem_tag_format = 0xaaaaaaaaaaaaaaaaULL;
	ep->tx_ctx_cnt = 1;
	ep->rx_ctx_cnt = 1;

	fi_domain_attr *d = info->domain_attr;
	const fi_domain_attr *cd = core->domain_attr;
	d->name = dup_or_null(cd->name);
	d->threading = FI_THREAD_SAFE;
	d->control_progress = FI_PROGRESS_AUTO;
	// FI_OFI_RXM_DATA_AUTO_PROGRESS gives endpoints a progress thread (see RxmEndpoint).
	d->data_progress = p.data_auto_progress ? FI_PROGRESS_AUTO : FI_PROGRESS_MANUAL;
	d->resource_mgmt = FI_RM_ENABLED;
	d->av_type = FI_AV_UNSPEC;
	// rxm registers its own bounce buffers; applications only see the core's remote rules.
	// (A core answering an old API version gives the legacy value: read it as bits.)
	d->mr_mode = util::mr_mode_bits(cd->mr_mode) &
		     (FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY);
	d->mr_key_size = cd->mr_key_size;
	copy_auth_key(cd, d);
	// Messages carry 64-bit CQ data in rxm's header, but fi_writedata hands it to the core's
	// write with data, which may carry less (verbs: 32-bit immediate data).
	d->cq_data_size = sizeof(uint64_t);
	if (core_has_rma(core) && cd->cq_data_size < d->cq_data_size)
		d->cq_data_size = cd->cq_data_size;
	d->cq_cnt = cd->cq_cnt;
	d->ep_cnt = cd->ep_cnt;
	d->tx_ctx_cnt = 1;
	d->rx_ctx_cnt = 1;
	d->max_ep_tx_ctx = 1;
	d->max_ep_rx_ctx = 1;
	d->mr_iov_limit = 1;
	d->mr_cnt = cd->mr_cnt;
	d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;

	fi_fabric_attr *f = info->fabric_attr;
	f->name = dup_or_null(core->fabric_attr->name);
	std::string layered = std::string(core->fabric_attr->prov_name) + ";" + kProviderName;
	f->prov_name = strdup(layered.c_str());
	f->prov_version = kProviderVersion;
	f->api_version = core->fabric_attr->api_version;
	if (!d->name || !f->name || !f->prov_name) {
		fi_freeinfo(info);
		return nullptr;
	}
	return info;
}

// The threading model of an application that serialises its own calls (fi_domain(3)): rxm
// answers it instead of FI_THREAD_SAFE, so the objects it builds on util skip the locks
// util's policy lets them skip (prov/util/lock.h: FI_THREAD_DOMAIN and FI_THREAD_COMPLETION
// with manual progress), and its endpoints theirs. rxm runs no control-progress thread (its
// connections advance with data progress, i.e. CQ reads), so for those two models control
// progress is answered manual unless the application asks for automatic, which it still
// gets (with the locks).
void honour_threading(const fi_info *hints, fi_domain_attr *d)
{
	if (!hints || !hints->domain_attr)
		return;
	unsigned asked = util::raw_enum(hints->domain_attr->threading);
	switch (asked) {
	case FI_THREAD_DOMAIN:
	case FI_THREAD_COMPLETION:
		if (util::raw_enum(hints->domain_attr->control_progress) != FI_PROGRESS_AUTO)
			d->control_progress = FI_PROGRESS_MANUAL;
		[[fallthrough]];
	case FI_THREAD_FID:
	case FI_THREAD_ENDPOINT:
		d->threading = static_cast<fi_threading>(asked);
		break;
	default:
		break; // unspecified or FI_THREAD_SAFE: as safe as rxm gets
	}
}

// Recursion guard: the core's fi_getinfo asks every provider, rxm included.
thread_local int nesting = 0;

} // namespace

bool core_has_rma(const fi_info *core)
{
	return core && (core->caps & FI_RMA) && (core->caps & FI_READ) &&
	       (core->caps & FI_REMOTE_READ);
}

bool core_name_of(const char *layered, std::string *core)
{
	core->clear();
	if (!layered || !*layered)
		return true;
	std::string text(layered);
	size_t start = 0;
	bool saw_rxm = false;
	while (start <= text.size()) {
		size_t end = text.find(';', start);
		if (end == std::string::npos)
			end = text.size();
		std::string part = text.substr(start, end - start);
		start = end + 1;
		if (part.empty())
			continue;
		if (part == kProviderName) {
			saw_rxm = true;
		} else if (is_utility(part)) {
			return false; // another utility provider
		} else if (core->empty()) {
			*core = part;
		} else {
			return false; // two cores
		}
	}
	(void)saw_rxm; // "tcp" alone also means tcp under rxm
	return true;
}

int rxm_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const fi_info *hints, fi_info **info)
{
	*info = nullptr;
	if (nesting > 0)
		return -FI_ENODATA;
	if (hints && hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != FI_EP_RDM)
		return -FI_ENODATA;
	std::string core;
	if (!core_name_of(hints && hints->fabric_attr ? hints->fabric_attr->prov_name : nullptr,
			  &core))
		return -FI_ENODATA;

	fi_info *ch = core_hints(hints, core);
	if (!ch)
		return -FI_ENOMEM;
	fi_info *cores = nullptr;
	nesting++;
	int ret = fi_getinfo(version, node, service, flags, ch, &cores);
	nesting--;
	fi_freeinfo(ch);
	if (ret)
		return ret;

	fi_info *head = nullptr, **tail = &head;
	for (fi_info *c = cores; c; c = c->next) {
		if (!c->fabric_attr || !c->fabric_attr->prov_name || !c->ep_attr ||
		    c->ep_attr->type != FI_EP_MSG || is_utility(c->fabric_attr->prov_name))
			continue;
		// An application that asks for an authorization key gets only cores that honour
		// it (they hand it back); silently unprotected connections would be worse.
		if (hints && hints->domain_attr && hints->domain_attr->auth_key_size &&
		    !(c->domain_attr && c->domain_attr->auth_key_size))
			continue;
		fi_info *r = rdm_info_from_core(c);
		if (!r) {
			ret = -FI_ENOMEM;
			break;
		}
		// An application asking for automatic data progress gets it (the endpoint then
		// runs a progress thread, RxmEndpoint::start_auto_progress); Open MPI's
		// mtl_ofi_data_progress=auto asks so.
		if (hints && hints->domain_attr &&
		    util::raw_enum(hints->domain_attr->data_progress) == FI_PROGRESS_AUTO)
			r->domain_attr->data_progress = FI_PROGRESS_AUTO;
		honour_threading(hints, r->domain_attr);
		*tail = r;
		tail = &r->next;
	}
	fi_freeinfo(cores);
	if (ret) {
		fi_freeinfo(head);
		return ret;
	}
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}

fi_info *core_info_for(const fi_info *rxm_info)
{
	std::string core;
	if (!rxm_info || !rxm_info->fabric_attr ||
	    !core_name_of(rxm_info->fabric_attr->prov_name, &core) || core.empty())
		return nullptr;
	fi_info *h = core_hints(nullptr, core);
	if (!h)
		return nullptr;
	h->addr_format = rxm_info->addr_format;
	if (rxm_info->src_addr) {
		h->src_addr = dup_bytes(rxm_info->src_addr, rxm_info->src_addrlen);
		h->src_addrlen = h->src_addr ? rxm_info->src_addrlen : 0;
	}
	if (rxm_info->domain_attr && rxm_info->domain_attr->name)
		h->domain_attr->name = strdup(rxm_info->domain_attr->name);
	if (rxm_info->fabric_attr->name)
		h->fabric_attr->name = strdup(rxm_info->fabric_attr->name);
	if (rxm_info->domain_attr) {
		h->domain_attr->mr_mode |= rxm_info->domain_attr->mr_mode;
		copy_auth_key(rxm_info->domain_attr, h->domain_attr);
	}
	fi_info *cores = nullptr;
	uint32_t version = rxm_info->fabric_attr->api_version ? rxm_info->fabric_attr->api_version
							      : FI_VERSION(1, 17);
	nesting++;
	int ret = fi_getinfo(version, nullptr, nullptr, rxm_info->src_addr ? FI_SOURCE : 0, h,
			     &cores);
	nesting--;
	fi_freeinfo(h);
	if (ret)
		return nullptr;
	// Keep the first; free the rest.
	fi_freeinfo(cores->next);
	cores->next = nullptr;
	return cores;
}

} // namespace rxm
