// Runs a legitimate tcp;ofi_rxm client in a forked process (so the server's fd limit does
// not apply to it) while the calling process serves, and says whether every message of the
// series arrived, verified, within the bound.
#pragma once

#include "test/adversarial/accept_rdm_peer.h"

#include <functional>
#include <string>

namespace adversarial {

struct ClientOutcome {
	bool client_ok = false;   // the client process sent everything and exited 0
	size_t received = 0;      // messages the server verified
	size_t bad = 0;           // messages with wrong content
	double seconds = 0;       // from fork to the last message
};

// `each_pass` runs after every server progress pass (e.g. to sample fds).
ClientOutcome serve_legit_client(RdmPeer &server, uint32_t count, int seconds,
				 const std::function<void()> &each_pass = {});

} // namespace adversarial
