// Socket address helpers for providers and AVs: measuring, comparing, printing and
// resolving struct sockaddr_in / sockaddr_in6 (IPv4 and IPv6).
#ifndef OFI_PROV_UTIL_SOCKADDR_UTIL_H
#define OFI_PROV_UTIL_SOCKADDR_UTIL_H

#include <rdma/fabric.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace util {

// Length of a sockaddr_in / sockaddr_in6 by its family; 0 for other families or NULL.
size_t sockaddr_length(const void *addr) noexcept;
// True when 'addr' is a sockaddr_in/in6 fitting in 'len' bytes and allowed by addr_format
// (FI_SOCKADDR: either, FI_SOCKADDR_IN: IPv4 only, FI_SOCKADDR_IN6: IPv6 only).
bool sockaddr_valid(const void *addr, size_t len, uint32_t addr_format) noexcept;
// The address family for an fi addr_format (AF_UNSPEC for FI_SOCKADDR, -1 if not sockaddr).
int family_for_format(uint32_t addr_format) noexcept;
// FI_SOCKADDR_IN / FI_SOCKADDR_IN6 for a sockaddr, FI_FORMAT_UNSPEC otherwise.
uint32_t format_of(const void *addr) noexcept;
bool is_sockaddr_format(uint32_t addr_format) noexcept;

uint16_t sockaddr_port(const void *addr) noexcept;  // host byte order
void sockaddr_set_port(void *addr, uint16_t port) noexcept;
bool sockaddr_is_any(const void *addr) noexcept;     // INADDR_ANY / in6addr_any
bool sockaddr_is_loopback(const void *addr) noexcept;
bool sockaddr_equal(const void *a, const void *b) noexcept;  // family, address and port

// "fi_sockaddr_in://127.0.0.1:4000", "fi_sockaddr_in6://[::1]:4000"; "fi_addr_unknown"
// for anything else.
std::string sockaddr_to_string(const void *addr);
// Copies the meaningful fields (family, port, address, IPv6 scope) of a sockaddr_in/in6
// into a zeroed 'out', so equal addresses compare equal byte for byte (sin_zero and
// flowinfo are dropped). Returns the length, 0 if 'addr' is not a sockaddr_in/in6.
size_t sockaddr_normalize(const void *addr, struct sockaddr_storage *out) noexcept;

// Host part only ("127.0.0.1", "::1").
std::string sockaddr_host(const void *addr);

// Resolves node/service with getaddrinfo into *out (*out_len set). 'passive' asks for a
// bindable address (node may then be NULL: wildcard). addr_format restricts the family.
// Returns 0, -FI_ENODATA (no such host/service), -FI_EINVAL.
int resolve_sockaddr(const char *node, const char *service, bool passive,
		     uint32_t addr_format, struct sockaddr_storage *out, size_t *out_len);

// Copies 'text' into buf/len the way fi_av_straddr and fi_tostr do: *len becomes the size
// needed (with the terminating NUL), output is truncated to the buffer. Returns buf.
const char *copy_string_out(const std::string &text, char *buf, size_t *len) noexcept;

} // namespace util

#endif
