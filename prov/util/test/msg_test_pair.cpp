#include "prov/util/test/msg_test_pair.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

namespace msg_test {
namespace {

using Clock = std::chrono::steady_clock;

bool expired(Clock::time_point start, int timeout_ms)
{
	return Clock::now() - start > std::chrono::milliseconds(timeout_ms);
}

} // namespace

MsgPair::MsgPair(const char *provider, const char *n, uint64_t c, int mr)
	: caps(c), mr_mode(mr), node(n), provider_(provider)
{
}

MsgPair::~MsgPair()
{
	for (fid_ep *ep : {server, client})
		if (ep)
			fi_close(&ep->fid);
	if (pep)
		fi_close(&pep->fid);
	for (fid_cq *cq : {server_cq, client_cq})
		if (cq)
			fi_close(&cq->fid);
	for (fid_eq *eq : {server_eq, client_eq})
		if (eq)
			fi_close(&eq->fid);
	if (domain)
		fi_close(&domain->fid);
	if (fabric)
		fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}

namespace {

bool ok(int ret, const char *what)
{
	EXPECT_EQ(0, ret) << what << ": " << fi_strerror(-ret);
	return ret == 0;
}

} // namespace

bool MsgPair::open(fi_wait_obj cq_wait, fi_progress progress)
{
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = caps;
	hints->fabric_attr->prov_name = strdup(provider_.c_str());
	hints->domain_attr->mr_mode = mr_mode;
	hints->domain_attr->data_progress = progress;
	if (!ok(fi_getinfo(version, node.c_str(), "0", FI_SOURCE, hints, &info),
		"fi_getinfo"))
		return false;
	fi_eq_attr eq_attr{};
	eq_attr.wait_obj = FI_WAIT_UNSPEC;
	fi_cq_attr cq_attr{};
	cq_attr.format = FI_CQ_FORMAT_DATA;
	cq_attr.wait_obj = cq_wait;
	if (!ok(fi_fabric(info->fabric_attr, &fabric, nullptr), "fi_fabric") ||
	    !ok(fi_domain(fabric, info, &domain, nullptr), "fi_domain") ||
	    !ok(fi_eq_open(fabric, &eq_attr, &server_eq, nullptr), "fi_eq_open") ||
	    !ok(fi_eq_open(fabric, &eq_attr, &client_eq, nullptr), "fi_eq_open") ||
	    !ok(fi_cq_open(domain, &cq_attr, &server_cq, nullptr), "fi_cq_open") ||
	    !ok(fi_cq_open(domain, &cq_attr, &client_cq, nullptr), "fi_cq_open") ||
	    !ok(fi_passive_ep(fabric, info, &pep, nullptr), "fi_passive_ep") ||
	    !ok(fi_pep_bind(pep, &server_eq->fid, 0), "fi_pep_bind") ||
	    !ok(fi_listen(pep), "fi_listen"))
		return false;
	size_t len = 128;
	listen_addr.resize(len);
	if (!ok(fi_getname(&pep->fid, listen_addr.data(), &len), "fi_getname"))
		return false;
	listen_addr.resize(len);
	return open_client();
}

bool MsgPair::open_client()
{
	if (client)
		fi_close(&client->fid);
	client = nullptr;
	// The client: an info aimed at the listener.
	fi_info *client_info = nullptr;
	fi_info *h = fi_dupinfo(hints);
	h->dest_addr = malloc(listen_addr.size());
	memcpy(h->dest_addr, listen_addr.data(), listen_addr.size());
	h->dest_addrlen = listen_addr.size();
	h->addr_format = info->addr_format;
	int ret = fi_getinfo(version, nullptr, nullptr, 0, h, &client_info);
	fi_freeinfo(h);
	if (!ok(ret, "fi_getinfo (client)"))
		return false;
	ret = fi_endpoint(domain, client_info, &client, nullptr);
	fi_freeinfo(client_info);
	if (!ok(ret, "fi_endpoint") || !ok(fi_ep_bind(client, &client_eq->fid, 0), "bind eq") ||
	    !ok(fi_ep_bind(client, &client_cq->fid, FI_TRANSMIT | FI_RECV), "bind cq"))
		return false;
	if (before_client_enable)
		before_client_enable(client);
	return ok(fi_enable(client), "fi_enable");
}

bool MsgPair::connect(const std::string &data, const std::string &accept_data)
{
	int ret = fi_connect(client, listen_addr.data(), data.empty() ? nullptr : data.data(),
			     data.size());
	EXPECT_EQ(0, ret) << fi_strerror(-ret);
	std::vector<uint8_t> got;
	if (ret || !accept_next(accept_data, nullptr, &got))
		return false;
	EXPECT_EQ(data, std::string(got.begin(), got.end()));
	EqEvent c = wait_eq(client_eq);
	EXPECT_EQ(FI_CONNECTED, c.event);
	EXPECT_EQ(&client->fid, c.fid);
	EXPECT_EQ(accept_data, std::string(c.data.begin(), c.data.end()));
	return c.event == FI_CONNECTED;
}

bool MsgPair::accept_next(const std::string &accept_data,
			  const std::function<void(fid_ep *)> &before_accept,
			  std::vector<uint8_t> *request_data)
{
	EqEvent req = wait_eq(server_eq);
	EXPECT_EQ(FI_CONNREQ, req.event);
	if (req.event != FI_CONNREQ || !req.info)
		return false;
	if (request_data)
		*request_data = req.data;
	EXPECT_NE(nullptr, req.info->handle);
	int ret = fi_endpoint(domain, req.info, &server, nullptr);
	fi_freeinfo(req.info);
	EXPECT_EQ(0, ret);
	if (ret)
		return false;
	EXPECT_EQ(0, fi_ep_bind(server, &server_eq->fid, 0));
	EXPECT_EQ(0, fi_ep_bind(server, &server_cq->fid, FI_TRANSMIT | FI_RECV));
	if (before_server_enable)
		before_server_enable(server);
	EXPECT_EQ(0, fi_enable(server));
	if (before_accept)
		before_accept(server);
	EXPECT_EQ(0, ret = fi_accept(server, accept_data.empty() ? nullptr : accept_data.data(),
				      accept_data.size()));
	if (ret)
		return false;
	EqEvent s = wait_eq(server_eq);
	EXPECT_EQ(FI_CONNECTED, s.event);
	EXPECT_EQ(&server->fid, s.fid);
	return s.event == FI_CONNECTED;
}

EqEvent MsgPair::wait_eq(fid_eq *eq, int timeout_ms)
{
	EqEvent out;
	uint8_t buf[sizeof(fi_eq_cm_entry) + 512];
	auto start = Clock::now();
	for (;;) {
		out.ret = fi_eq_read(eq, &out.event, buf, sizeof(buf), 0);
		if (out.ret > 0) {
			auto *entry = reinterpret_cast<fi_eq_cm_entry *>(buf);
			out.fid = entry->fid;
			out.info = entry->info;
			if (static_cast<size_t>(out.ret) > sizeof(*entry))
				out.data.assign(buf + sizeof(*entry), buf + out.ret);
			return out;
		}
		if (out.ret == -FI_EAVAIL) {
			out.event = 0;
			fi_eq_readerr(eq, &out.error, 0);
			if (out.error.err_data && out.error.err_data_size)
				out.err_data.assign(
					static_cast<uint8_t *>(out.error.err_data),
					static_cast<uint8_t *>(out.error.err_data) +
						out.error.err_data_size);
			return out;
		}
		if (out.ret != -FI_EAGAIN || expired(start, timeout_ms)) {
			out.event = 0;
			return out;
		}
	}
}

ssize_t MsgPair::wait_cq(fid_cq *cq, fi_cq_data_entry *entry, fi_cq_err_entry *err,
			 int timeout_ms)
{
	auto start = Clock::now();
	for (;;) {
		ssize_t ret = fi_cq_read(cq, entry, 1);
		if (ret == -FI_EAVAIL && err) {
			*err = fi_cq_err_entry{};
			fi_cq_readerr(cq, err, 0);
		}
		if (ret != -FI_EAGAIN || expired(start, timeout_ms))
			return ret;
	}
}

bool MsgPair::cq_stays_empty(fid_cq *cq, int ms)
{
	auto start = Clock::now();
	while (!expired(start, ms)) {
		fi_cq_data_entry entry;
		if (fi_cq_read(cq, &entry, 1) != -FI_EAGAIN)
			return false;
	}
	return true;
}

} // namespace msg_test
