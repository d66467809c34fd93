#include "test/adversarial/iso_harness.h"

#include <rdma/fi_cm.h>

#include <cstring>

namespace iso {

namespace {

using Clock = std::chrono::steady_clock;

void poll_all(const std::vector<Side *> &sides)
{
	for (Side *s : sides)
		s->poll();
}

}  // namespace

MsgServer::MsgServer(fi_info *info) : side(info)
{
	if (!side.ok || fi_passive_ep(side.fabric, info, &pep, nullptr) ||
	    fi_pep_bind(pep, &side.eq->fid, 0) || fi_listen(pep))
		return;
	addr_len = sizeof(addr);
	ok = fi_getname(&pep->fid, addr, &addr_len) == 0;
}

MsgServer::~MsgServer()
{
	for (fid_ep *ep : eps)
		fi_close(&ep->fid);
	if (pep)
		fi_close(&pep->fid);
}

fid_ep *connect_msg(Side &client, const void *addr, const void *cm_data, size_t cm_len,
		    MsgServer *server, const std::vector<Side *> &progress)
{
	fid_ep *ep = nullptr;
	if (fi_endpoint(client.domain, client.info, &ep, nullptr) ||
	    fi_ep_bind(ep, &client.eq->fid, 0) ||
	    fi_ep_bind(ep, &client.cq->fid, FI_TRANSMIT | FI_RECV) || fi_enable(ep) ||
	    fi_connect(ep, addr, cm_data, cm_len)) {
		if (ep)
			fi_close(&ep->fid);
		return nullptr;
	}
	bool up = false, accepted = server == nullptr;
	auto deadline = Clock::now() + std::chrono::seconds(kWaitSeconds);
	while (!(up && accepted) && Clock::now() < deadline) {
		uint32_t event = 0;
		// Room for the accept's CM data (rxm sends some).
		alignas(fi_eq_cm_entry) uint8_t with_data[sizeof(fi_eq_cm_entry) + 256];
		if (fi_eq_read(client.eq, &event, with_data, sizeof(with_data), 0) > 0 &&
		    event == FI_CONNECTED)
			up = true;
		fi_eq_cm_entry e{};
		fi_eq_err_entry err{};
		if (fi_eq_readerr(client.eq, &err, 0) > 0)
			break;
		poll_all(progress);
		if (!server)
			continue;
		ssize_t n = fi_eq_read(server->side.eq, &event, &e, sizeof(e), 0);
		if (n > 0 && event == FI_CONNREQ) {
			fid_ep *sep = nullptr;
			int ret = fi_endpoint(server->side.domain, e.info, &sep, nullptr);
			fi_freeinfo(e.info);
			if (ret || fi_ep_bind(sep, &server->side.eq->fid, 0) ||
			    fi_ep_bind(sep, &server->side.cq->fid, FI_TRANSMIT | FI_RECV) ||
			    fi_enable(sep) || fi_accept(sep, nullptr, 0))
				break;
			server->eps.push_back(sep);
		} else if (n > 0 && event == FI_CONNECTED) {
			accepted = true;
		}
	}
	if (up && accepted)
		return ep;
	fi_close(&ep->fid);
	return nullptr;
}

Completion wait_completion(Side &side, void *context, const std::vector<Side *> &others,
			   bool &found, int seconds)
{
	auto deadline = Clock::now() + std::chrono::seconds(seconds);
	while (Clock::now() < deadline) {
		side.poll();
		poll_all(others);
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

void fill_pattern(uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = static_cast<uint8_t>(x >> 16);
	}
}

bool check_pattern(const uint8_t *p, size_t len, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		if (p[i] != static_cast<uint8_t>(x >> 16))
			return false;
	}
	return true;
}

}  // namespace iso
