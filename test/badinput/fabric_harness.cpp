#include "test/badinput/fabric_harness.h"

#include "config.h"
#include "src/registry.h"

#include <chrono>
#include <cstring>

namespace harness {

#ifdef HAVE_TCP
// The registry refers to providers weakly; naming them links them in from the convenience
// library.
fi_provider *(*volatile link_tcp)() = ofi_tcp_provider_init;
#endif
#ifdef HAVE_RXM
fi_provider *(*volatile link_rxm)() = ofi_rxm_provider_init;
#endif

namespace {

fi_info *lookup(const char *prov, fi_ep_type type, uint64_t caps)
{
	fi_info *hints = fi_allocinfo();
	if (!hints)
		return nullptr;
	hints->ep_attr->type = type;
	hints->caps = caps;
	hints->addr_format = FI_SOCKADDR_IN;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	fi_info *info = nullptr;
	int ret = fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", nullptr, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	return ret ? nullptr : info;
}

// Reads both EQs once (CM progress is driven by EQ reads on each side) and notes what came.
void read_cm_events(Side &a, Side &b, bool &a_up, bool &b_up, fi_info **request)
{
	uint32_t event = 0;
	fi_eq_cm_entry e{};
	if (fi_eq_read(a.eq, &event, &e, sizeof(e), 0) > 0 && event == FI_CONNECTED)
		a_up = true;
	if (fi_eq_read(b.eq, &event, &e, sizeof(e), 0) > 0) {
		if (event == FI_CONNECTED)
			b_up = true;
		else if (event == FI_CONNREQ && request)
			*request = e.info;
		else if (event == FI_CONNREQ)
			fi_freeinfo(e.info);
	}
}

}  // namespace

fi_info *rdm_info(uint64_t caps)
{
	return lookup("tcp;ofi_rxm", FI_EP_RDM, caps);
}

fi_info *msg_info(uint64_t caps)
{
	return lookup("tcp", FI_EP_MSG, caps);
}

Side::Side(fi_info *i) : info(i)
{
	if (fi_fabric(info->fabric_attr, &fabric, nullptr))
		return;
	if (fi_domain(fabric, info, &domain, nullptr))
		return;
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.size = 256;
	if (fi_cq_open(domain, &cq_attr, &cq, nullptr))
		return;
	fi_eq_attr eq_attr{};
	eq_attr.size = 64;
	if (fi_eq_open(fabric, &eq_attr, &eq, nullptr))
		return;
	if (info->ep_attr->type == FI_EP_RDM) {
		fi_av_attr av_attr{};
		av_attr.type = FI_AV_TABLE;
		if (fi_av_open(domain, &av_attr, &av, nullptr))
			return;
		if (fi_endpoint(domain, info, &ep, nullptr))
			return;
		if (fi_ep_bind(ep, &av->fid, 0) || fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV) ||
		    fi_enable(ep))
			return;
	}
	ok = true;
}

Side::~Side()
{
	if (ep)
		fi_close(&ep->fid);
	if (av)
		fi_close(&av->fid);
	if (cq)
		fi_close(&cq->fid);
	if (eq)
		fi_close(&eq->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
}

void Side::poll()
{
	if (!cq)
		return;
	fi_cq_data_entry e[8];
	ssize_t n = fi_cq_read(cq, e, 8);
	for (ssize_t i = 0; i < n; i++)
		done.push_back({false, e[i].op_context, e[i].flags, 0});
	if (n == -FI_EAVAIL) {
		fi_cq_err_entry err{};
		if (fi_cq_readerr(cq, &err, 0) == 1)
			done.push_back({true, err.op_context, err.flags, err.err});
	}
}

RdmPair::RdmPair(fi_info *info) : a(info), b(info)
{
	if (!a.ok || !b.ok)
		return;
	char name[128];
	size_t len = sizeof(name);
	if (fi_getname(&b.ep->fid, name, &len) || fi_av_insert(a.av, name, 1, &b_at_a, 0, nullptr) != 1)
		return;
	len = sizeof(name);
	if (fi_getname(&a.ep->fid, name, &len) || fi_av_insert(b.av, name, 1, &a_at_b, 0, nullptr) != 1)
		return;
	ok = true;
}

MsgPair::MsgPair(fi_info *info) : a(info), b(info)
{
	if (!a.ok || !b.ok)
		return;
	if (fi_passive_ep(b.fabric, info, &pep, nullptr) || fi_pep_bind(pep, &b.eq->fid, 0) ||
	    fi_listen(pep))
		return;
	char addr[128];
	size_t len = sizeof(addr);
	if (fi_getname(&pep->fid, addr, &len))
		return;
	if (fi_endpoint(a.domain, info, &a.ep, nullptr) || fi_ep_bind(a.ep, &a.eq->fid, 0) ||
	    fi_ep_bind(a.ep, &a.cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(a.ep) ||
	    fi_connect(a.ep, addr, nullptr, 0))
		return;
	bool a_up = false, b_up = false;
	fi_info *request = nullptr;
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (!request && std::chrono::steady_clock::now() < deadline)
		read_cm_events(a, b, a_up, b_up, &request);
	if (!request)
		return;
	int ret = fi_endpoint(b.domain, request, &b.ep, nullptr);
	fi_freeinfo(request);
	if (ret || fi_ep_bind(b.ep, &b.eq->fid, 0) ||
	    fi_ep_bind(b.ep, &b.cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(b.ep) ||
	    fi_accept(b.ep, nullptr, 0))
		return;
	while (!(a_up && b_up) && std::chrono::steady_clock::now() < deadline)
		read_cm_events(a, b, a_up, b_up, nullptr);
	ok = a_up && b_up;
}

MsgPair::~MsgPair()
{
	if (pep)
		fi_close(&pep->fid);
}

Completion wait_for(Side &side, Side &other, void *context, bool &found, int seconds)
{
	auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
	while (std::chrono::steady_clock::now() < deadline) {
		side.poll();
		other.poll();
		for (auto it = side.done.begin(); it != side.done.end(); ++it) {
			if (it->context == context) {
				Completion c = *it;
				side.done.erase(it);
				found = true;
				return c;
			}
		}
	}
	found = false;
	return {};
}

}  // namespace harness
