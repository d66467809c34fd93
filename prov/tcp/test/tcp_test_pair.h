// A connected pair of tcp endpoints in one process for API-level tests (msg_test::MsgPair
// over "tcp": FI_MSG | FI_RMA | FI_MULTI_RECV, FI_MR_PROV_KEY by default).
#ifndef PROV_TCP_TEST_TCP_TEST_PAIR_H
#define PROV_TCP_TEST_TCP_TEST_PAIR_H

#include "prov/util/test/msg_test_pair.h"

namespace tcp_test {

using msg_test::EqEvent;

class TcpPair : public msg_test::MsgPair {
public:
	// node: "127.0.0.1" or "::1".
	explicit TcpPair(const char *node = "127.0.0.1")
		: MsgPair("tcp", node, FI_MSG | FI_RMA | FI_MULTI_RECV, FI_MR_PROV_KEY)
	{
	}
};

// An unused loopback port (bound then released) for "nobody listens here" tests.
int closed_port(int family);

} // namespace tcp_test

#endif
