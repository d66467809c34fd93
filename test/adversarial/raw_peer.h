// A hostile peer on the wire: a blocking TCP socket that speaks just enough of the tcp
// provider's CM exchange and data stream, and of rxm's messages, to send whatever an attacker
// wants (forged identities, stalled or truncated messages, requests it never serves). It is
// built on the providers' own encoders, so its frames are exactly what a real peer sends;
// what it chooses to say is up to the test.
#pragma once

#include "prov/rxm/rxm_cm_data.h"
#include "prov/rxm/rxm_wire.h"
#include "prov/tcp/tcp_cm_message.h"
#include "prov/tcp/tcp_wire.h"

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace adversary {

// rxm CM data announcing 'name' (a socket address: what the peer would insert in its AV) and
// 'endpoint_id' as the requester's identity.
std::vector<uint8_t> rxm_cm_request(const sockaddr *name, socklen_t name_len,
				    uint64_t endpoint_id, uint32_t eager_size = 65536);

class RawPeer {
public:
	RawPeer() = default;
	~RawPeer();
	RawPeer(const RawPeer &) = delete;
	RawPeer &operator=(const RawPeer &) = delete;

	// Connects to 'dst', from 'src' when given (e.g. 127.0.0.2 to pose as another host).
	// 0 or -errno.
	int connect_to(const sockaddr *dst, socklen_t dst_len, const sockaddr *src = nullptr,
		       socklen_t src_len = 0);
	// Sends a tcp CM request carrying 'cm' and waits up to timeout_ms for the answer.
	// 0 with *answer set (accept or reject; the data in answer_data), or -errno / -FI_EIO.
	int request(const void *cm, size_t cm_len, int timeout_ms, tcp::CmType *answer,
		    std::vector<uint8_t> *answer_data);
	// rxm handshake: request with rxm CM data; 0 once accepted, with the server's CM data
	// (its conn_id is then stamped on every rxm message this peer sends).
	int rxm_handshake(const sockaddr *name, socklen_t name_len, uint64_t endpoint_id,
			  int timeout_ms, rxm::CmData *server = nullptr);

	// Sends all of 'len' bytes (waiting up to timeout_ms for room). 0 or -errno.
	int send_bytes(const void *buf, size_t len, int timeout_ms = 5000);
	// One tcp data-stream frame: header, then 'payload_len' bytes of payload (the header's
	// size is what the peer will expect, so a shorter payload_len stalls the frame).
	int send_frame(const tcp::WireHeader &hdr, const void *payload, size_t payload_len);
	// An rxm message in a tcp msg frame announcing header + payload_len bytes; only the first
	// 'send_only' bytes of rxm header + payload go out (the rest never comes: a stall).
	int send_rxm(rxm::WireHeader hdr, const void *payload, size_t payload_len,
		     size_t send_only = SIZE_MAX);
	// Reads one tcp frame (header and payload) within timeout_ms. 0, -FI_ETIMEDOUT, -FI_EIO
	// (malformed or closed) or -errno.
	int recv_frame(tcp::WireHeader *hdr, std::vector<uint8_t> *payload, int timeout_ms);

	int fd() const { return fd_; }
	uint32_t server_conn_id() const { return server_conn_id_; }
	void close_now();

private:
	int recv_exact(void *buf, size_t len, int timeout_ms);
	int fd_ = -1;
	uint32_t server_conn_id_ = 0;
};

} // namespace adversary
