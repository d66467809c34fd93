// Connection management messages over the AF_UNIX (SOCK_SEQPACKET) socket of a connection.
// One datagram each: magic u32 "shmc" (0x636d6873 LE) | version u8 (1) | type u8 (1 request,
// 2 accept, 3 reject) | data length u16 LE (<= 256) | CM data. A request carries the segment's
// memfd and the connector's doorbell eventfd (SCM_RIGHTS), an accept the acceptor's eventfd.
// Anything else (wrong size, magic, type, fd count) fails the connection.
#ifndef PROV_SHM_SHM_CM_H
#define PROV_SHM_SHM_CM_H

#include "prov/shm/shm_provider.h"

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace shm {

inline constexpr uint8_t kCmRequest = 1;
inline constexpr uint8_t kCmAccept = 2;
inline constexpr uint8_t kCmReject = 3;

struct CmMessage {
	uint8_t type = 0;
	uint16_t data_len = 0;
	uint8_t data[kMaxCmData] = {};
	int fds[2] = {-1, -1};   // received descriptors (owned by the receiver)
	size_t fd_count = 0;
	void close_fds();
};

// The fd count each type must carry.
size_t fds_for(uint8_t type);

// 0 or -FI_E*. Never blocks (a full socket is -FI_EAGAIN).
int send_cm(int sock, uint8_t type, const void *data, size_t len, const int *fds,
	    size_t fd_count);
// 1: *out holds a validated message; 0: nothing yet; -FI_ECONNRESET when the peer closed;
// -FI_EIO for a malformed message (its fds are closed).
int recv_cm(int sock, CmMessage *out);

// SO_PEERCRED of a connected AF_UNIX socket: true when the peer runs as our effective uid.
bool peer_is_same_user(int sock, pid_t *pid = nullptr);

} // namespace shm

#endif
