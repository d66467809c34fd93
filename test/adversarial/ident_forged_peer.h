// A forged rxm peer for the identity and same-host tests: a plain `tcp` FI_EP_MSG endpoint
// (public API only) that connects to an rxm endpoint's listener from a chosen source IP,
// presents rxm CM data claiming any identity, and then sends hand-built rxm messages. It is
// what any local process can do without our library's cooperation.
#pragma once

#include "prov/rxm/rxm_cm_data.h"

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ident {

// Runs everything else that must progress while a forged peer waits (the server's CQ reads).
using Pump = std::function<void()>;

class ForgedPeer {
public:
	// src_ip: the IPv4 address the connection leaves from (any 127/8 address on loopback).
	explicit ForgedPeer(const char *src_ip);
	~ForgedPeer();
	ForgedPeer(const ForgedPeer &) = delete;
	ForgedPeer &operator=(const ForgedPeer &) = delete;

	bool ok() const { return ok_; }

	enum class Outcome { accepted, refused, timeout, failed };
	// Connects to `target` (an rxm endpoint's name) presenting CM data that claims `claimed`;
	// waits up to `seconds`, calling pump meanwhile. The peer's CM data (accept or reject)
	// lands in *answer when it sent any.
	Outcome connect(const std::string &target, const rxm::EndpointIdentity &claimed,
			const Pump &pump, int seconds, rxm::CmData *answer);

	// Sends one core message (an rxm header and payload) and waits for its completion.
	bool send(const std::vector<uint8_t> &bytes, const Pump &pump, int seconds);
	// Reads the CQ and EQ once (the tcp core serves RMA and notices shutdowns from here).
	void progress();
	// The local address of the connection, as fi_getname reports it.
	std::string local_name() const;

private:
	fid_fabric *fabric_ = nullptr;
	fid_domain *domain_ = nullptr;
	fid_eq *eq_ = nullptr;
	fid_cq *cq_ = nullptr;
	fid_ep *ep_ = nullptr;
	fi_info *info_ = nullptr;
	std::vector<uint8_t> rx_[4];
	bool ok_ = false;
	bool shut_down_ = false;
	int sends_done_ = 0;
	int send_errors_ = 0;
};

// An identity with the given name bytes (a sockaddr) and endpoint id.
rxm::EndpointIdentity identity_named(const std::string &name, uint64_t endpoint_id);

// The name of an fid (fi_getname) as bytes.
std::string name_of(fid_t fid);

// "127.0.0.1:port" style for messages.
std::string describe(const std::string &sockaddr_bytes);

} // namespace ident
