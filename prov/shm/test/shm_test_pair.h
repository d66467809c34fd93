// A connected pair of shm endpoints in one process for API-level tests (msg_test::MsgPair
// over "shm": FI_MSG, no mr_mode bits by default).
#ifndef PROV_SHM_TEST_SHM_TEST_PAIR_H
#define PROV_SHM_TEST_SHM_TEST_PAIR_H

#include "prov/util/test/msg_test_pair.h"

namespace shm_test {

using msg_test::EqEvent;

class ShmPair : public msg_test::MsgPair {
public:
	explicit ShmPair(const char *node = "127.0.0.1") : MsgPair("shm", node, FI_MSG, 0) {}
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
