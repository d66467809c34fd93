// Which layering and local address the rxm integration tests run on: "tcp;ofi_rxm" on
// 127.0.0.1 by default; RXM_TEST_PROV and RXM_TEST_ADDR choose others (the Soft-RoCE VM runs
// them as "verbs;ofi_rxm" on 192.0.2.1, whose rxe device loopback 127.0.0.1 is not).
#pragma once

#include <rdma/fi_domain.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cstdint>
#include <cstdlib>

namespace rxm_test {

inline const char *env_or(const char *name, const char *fallback)
{
	const char *value = std::getenv(name);
	return value && *value ? value : fallback;
}

inline const char *provider() { return env_or("RXM_TEST_PROV", "tcp;ofi_rxm"); }
inline const char *address() { return env_or("RXM_TEST_ADDR", "127.0.0.1"); }

// A build without tcp may lack the default layering (its tests skip); a layering asked for by
// name must exist.
inline bool provider_must_exist() { return std::getenv("RXM_TEST_PROV") != nullptr; }

// The memory-registration rules the tests handle: keys come from fi_mr_key, RMA addresses
// follow FI_MR_VIRT_ADDR, buffers are allocated. Said in the hints because a core that
// imposes them (verbs) is otherwise filtered out: rxm passes them through to the application.
inline int mr_mode() { return FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY; }

// An IPv4 socket address, e.g. for AV inserts.
inline sockaddr_in ipv4(const char *ip, uint16_t port)
{
	sockaddr_in in{};
	in.sin_family = AF_INET;
	in.sin_port = htons(port);
	inet_pton(AF_INET, ip, &in.sin_addr);
	return in;
}

} // namespace rxm_test
