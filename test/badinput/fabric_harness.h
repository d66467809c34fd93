// Small public-API harness for the bad-input and RMA security tests: RDM nodes of
// "tcp;ofi_rxm" and a connected FI_EP_MSG pair of "tcp", all on loopback. Only fi_* calls
// are used, so the tests exercise exactly what an application can reach.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <cstdint>
#include <deque>
#include <string>

namespace harness {

// A flag bit no 1.17 header defines (bits 14, 15 and 23 are free; 60-63 are provider-specific).
constexpr uint64_t kUnknownFlag = 1ULL << 15;

// The provider infos the tests run on; NULL when the provider cannot run here.
fi_info *rdm_info(uint64_t caps);
fi_info *msg_info(uint64_t caps);

struct Completion {
	bool error = false;
	void *context = nullptr;
	uint64_t flags = 0;
	int err = 0;
};

// Everything one side of a test needs: fabric, domain, CQ (for tx and rx), optional AV.
struct Side {
	explicit Side(fi_info *info);
	~Side();
	Side(const Side &) = delete;
	Side &operator=(const Side &) = delete;

	// Reads the CQ once, appending anything found to 'done'.
	void poll();

	fi_info *info;
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_cq *cq = nullptr;
	fid_eq *eq = nullptr;
	fid_av *av = nullptr;
	fid_ep *ep = nullptr;
	std::deque<Completion> done;
	bool ok = false;  // every open step succeeded
};

// Two RDM endpoints that have each other in their AVs.
struct RdmPair {
	explicit RdmPair(fi_info *info);
	Side a, b;
	fi_addr_t b_at_a = FI_ADDR_NOTAVAIL;
	fi_addr_t a_at_b = FI_ADDR_NOTAVAIL;
	bool ok = false;
};

// A connected pair of MSG endpoints (client a, accepted server side b).
struct MsgPair {
	explicit MsgPair(fi_info *info);
	~MsgPair();
	Side a, b;
	fid_pep *pep = nullptr;
	bool ok = false;
};

// Polls both sides until 'side' has a completion for 'context' or 'seconds' pass; found
// is false on timeout.
Completion wait_for(Side &side, Side &other, void *context, bool &found, int seconds = 10);

}  // namespace harness
