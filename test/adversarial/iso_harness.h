// Helpers of the isolation tests (iso_*): a tcp MSG server with several accepted
// connections in one domain, clients connecting to any listener address with chosen CM
// data, and CQ polling over many sides with a deadline. Public fi_* calls only.
#pragma once

#include "test/badinput/fabric_harness.h"

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace iso {

using harness::Completion;
using harness::Side;

// Generous bound for any one wait: the tests must not be flaky on a loaded 2-core machine.
constexpr int kWaitSeconds = 20;

// A listening tcp MSG side: its endpoints all live in one domain and share one CQ.
struct MsgServer {
	explicit MsgServer(fi_info *info);
	~MsgServer();
	Side side;
	fid_pep *pep = nullptr;
	std::vector<fid_ep *> eps;
	char addr[128]{};
	size_t addr_len = 0;
	bool ok = false;
};

// Connects a new MSG endpoint of 'client' to 'addr' with 'cm_data'. When 'server' is given
// its side accepts the request (the new endpoint is appended to server->eps); otherwise the
// caller's 'progress' (polled meanwhile) must make the listener accept it. Returns nullptr
// on failure or after kWaitSeconds.
fid_ep *connect_msg(Side &client, const void *addr, const void *cm_data, size_t cm_len,
		    MsgServer *server, const std::vector<Side *> &progress = {});

// Polls every side until 'side' has a completion for 'context'; found=false on timeout.
Completion wait_completion(Side &side, void *context, const std::vector<Side *> &others,
			   bool &found, int seconds = kWaitSeconds);

// Fills [p, p+len) with a byte pattern derived from 'seed'; check_pattern compares.
void fill_pattern(uint8_t *p, size_t len, uint32_t seed);
bool check_pattern(const uint8_t *p, size_t len, uint32_t seed);

}  // namespace iso
