// A connected pair of MSG endpoints of one core provider (tcp, shm) in one process for
// API-level tests: one fabric and one domain (so reading either CQ or EQ progresses both
// sides), a passive endpoint, a client and an accepted server endpoint, each with its own
// CQ and EQ. Every wait is bounded. prov/tcp/test/tcp_test_pair.h and
// prov/shm/test/shm_test_pair.h name it for their provider.
#ifndef PROV_UTIL_TEST_MSG_TEST_PAIR_H
#define PROV_UTIL_TEST_MSG_TEST_PAIR_H

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <functional>
#include <string>
#include <vector>

namespace msg_test {

struct EqEvent {
	ssize_t ret = 0;              // fi_eq_read's result (bytes, or -FI_E*)
	uint32_t event = 0;
	fid_t fid = nullptr;
	fi_info *info = nullptr;
	std::vector<uint8_t> data;    // CM data after the fi_eq_cm_entry
	fi_eq_err_entry error{};      // when ret == -FI_EAVAIL
	std::vector<uint8_t> err_data;
};

class MsgPair {
public:
	// provider: the core's name ("tcp", "shm"); node: "127.0.0.1" (or "::1" for tcp);
	// caps and mr_mode: what open() asks fi_getinfo for by default.
	MsgPair(const char *provider, const char *node, uint64_t caps, int mr_mode);
	~MsgPair();
	MsgPair(const MsgPair &) = delete;
	MsgPair &operator=(const MsgPair &) = delete;

	// Opens fabric, domain, EQs, CQs, the passive endpoint (listening on an ephemeral port
	// or, over shm, a name of its own) and the client endpoint. Returns false (with a gtest
	// failure) on any error.
	bool open(fi_wait_obj cq_wait = FI_WAIT_NONE,
		  fi_progress progress = FI_PROGRESS_UNSPEC);
	// Closes the client endpoint (if any) and opens a new one aimed at the listener (an
	// endpoint whose connection was refused or shut down cannot connect again).
	bool open_client();
	// fi_connect with `data`, waits for FI_CONNREQ, opens the server endpoint, accepts with
	// `accept_data` and waits for FI_CONNECTED on both sides.
	bool connect(const std::string &data = "", const std::string &accept_data = "");
	// The listener's side of a connection: waits for FI_CONNREQ (its CM data into
	// *request_data when given), opens `server` for it (bound to server_eq and server_cq;
	// before_server_enable runs), runs `before_accept` (e.g. to post the receive a peer's
	// first message needs), accepts with `accept_data` and waits for FI_CONNECTED there.
	bool accept_next(const std::string &accept_data = "",
			 const std::function<void(fid_ep *)> &before_accept = nullptr,
			 std::vector<uint8_t> *request_data = nullptr);

	// Bounded waits (5 s). wait_eq returns the first event or error of `eq`.
	EqEvent wait_eq(fid_eq *eq, int timeout_ms = 5000);
	// Reads one completion from `cq`; ret is 1, or -FI_EAVAIL with *err filled, or
	// -FI_EAGAIN on timeout.
	ssize_t wait_cq(fid_cq *cq, fi_cq_data_entry *entry, fi_cq_err_entry *err = nullptr,
			int timeout_ms = 5000);
	// True if `cq` stays empty for `ms` milliseconds (while progressing).
	bool cq_stays_empty(fid_cq *cq, int ms = 100);

	fi_info *hints = nullptr;
	fi_info *info = nullptr;          // listener info (FI_SOURCE)
	fid_fabric *fabric = nullptr;
	fid_domain *domain = nullptr;
	fid_eq *server_eq = nullptr, *client_eq = nullptr;
	fid_cq *server_cq = nullptr, *client_cq = nullptr;
	fid_pep *pep = nullptr;
	fid_ep *client = nullptr, *server = nullptr;
	// Runs on the accepted endpoint before fi_enable (e.g. to bind counters).
	std::function<void(fid_ep *)> before_server_enable;
	// What open() asks fi_getinfo for (set them before open()).
	uint32_t version = FI_VERSION(1, 17);
	uint64_t caps;
	int mr_mode;
	// Runs on each new client endpoint before fi_enable (set it before open()).
	std::function<void(fid_ep *)> before_client_enable;
	std::vector<uint8_t> listen_addr;
	std::string node;

private:
	std::string provider_;
};

} // namespace msg_test

#endif
