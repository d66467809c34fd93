// Addresses of the shm provider (FI_ADDR_STR): "fi_shm://NAME", NUL-padded to a fixed 32
// bytes so AVs (rxm's among them) store them as fixed-size entries. NAME is the service a
// listener was given (fi_getinfo node/service) or "PID:N" for one that took its own; it
// names an abstract AF_UNIX socket of the caller's network namespace, per user:
// "\0fi_shm.UID.NAME". Nothing is created on the filesystem. What the name reaches is only
// that socket, whose owner is checked with SO_PEERCRED (shm_cm.h) before any memory is shared.
#ifndef PROV_SHM_SHM_ADDRESS_H
#define PROV_SHM_SHM_ADDRESS_H

#include <sys/socket.h>
#include <sys/un.h>

#include <cstddef>
#include <string>

namespace shm {

inline constexpr size_t kAddrLen = 32;
inline constexpr char kAddrPrefix[] = "fi_shm://";

struct ShmAddress {
	char text[kAddrLen] = {};
};

// True when [addr, addr+len) holds a valid address (prefix, 1..22 name characters out of
// [0-9A-Za-z._:-], NUL within len); *out gets it normalized (padded with NULs).
bool parse_address(const void *addr, size_t len, ShmAddress *out);
// "fi_shm://SERVICE" (false when the service is not a valid name).
bool address_for_service(const char *service, ShmAddress *out);
// A fresh "fi_shm://PID:N", unique in this process.
ShmAddress unique_address();
// The abstract socket name an address stands for; returns the sockaddr length.
socklen_t socket_name(const ShmAddress &addr, sockaddr_un *out);

} // namespace shm

#endif
