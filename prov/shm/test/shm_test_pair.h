// A connected pair of shm endpoints in one process for API-level tests: one fabric and one
// domain (so reading either CQ or EQ progresses both sides), a passive endpoint, a client
// and an accepted server endpoint, each with its own CQ and EQ. Every wait is bounded.
#ifndef PROV_SHM_TEST_SHM_TEST_PAIR_H
#define PROV_SHM_TEST_SHM_TEST_PAIR_H

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

namespace shm_test {

struct EqEvent {
	ssize_t ret = 0;              // fi_eq_read's result (bytes, or -FI_E*)
	uint32_t event = 0;
	fid_t fid = nullptr;
	fi_info *info = nullptr;
	std::vector<uint8_t> data;    // CM data after the fi_eq_cm_entry
	fi_eq_err_entry error{};      // when ret == -FI_EAVAIL
	std::vector<uint8_t> err_data;
};

class ShmPair {
public:
	explicit ShmPair(const char *node = "127.0.0.1");
	~ShmPair();

	// Opens fabric, domain, EQs, CQs, the passive endpoint (listening on an ephemeral port)
	// (under a name of its own) and the client endpoint. Returns false (with a gtest failure) on any error.
	bool open(fi_wait_obj cq_wait = FI_WAIT_NONE,
		  fi_progress progress = FI_PROGRESS_UNSPEC);
	// Closes the client endpoint (if any) and opens a new one aimed at the listener (an
	// endpoint whose connection was refused or shut down cannot connect again).
	bool open_client();
	// fi_connect with `data`, waits for FI_CONNREQ, opens the server endpoint, accepts with
	// `accept_data` and waits for FI_CONNECTED on both sides.
	bool connect(const std::string &data = "", const std::string &accept_data = "");

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
	int mr_mode = 0;
	uint64_t caps = FI_MSG;
	// Runs on each new client endpoint before fi_enable (set it before open()).
	std::function<void(fid_ep *)> before_client_enable;
	std::vector<uint8_t> listen_addr;
	std::string node;
};

// One round of a busy-polling ping-pong between the pair's ends: both receives posted, a
// 64-byte message from the client and one back, each completion read with `poll_one`, which
// brings the caller's bound (a clock; or a pass count where a clock read would be a system
// call the test counts, or instructions it measures). Returns nullptr, or the step that
// failed (check with ASSERT_STREQ(nullptr, ...)).
template <class PollOne>
const char *ping_pong_round(ShmPair &p, PollOne poll_one)
{
	char out[64] = "ping", in[64];
	if (fi_recv(p.client, in, sizeof(in), nullptr, 0, nullptr))
		return "client fi_recv";
	if (fi_recv(p.server, in, sizeof(in), nullptr, 0, nullptr))
		return "server fi_recv";
	if (fi_send(p.client, out, sizeof(out), nullptr, 0, nullptr))
		return "client fi_send";
	if (!poll_one(p.server_cq))
		return "server receive completion";
	if (!poll_one(p.client_cq))
		return "client send completion";
	if (fi_send(p.server, out, sizeof(out), nullptr, 0, nullptr))
		return "server fi_send";
	if (!poll_one(p.client_cq))
		return "client receive completion";
	if (!poll_one(p.server_cq))
		return "server send completion";
	return nullptr;
}

} // namespace shm_test

#endif
