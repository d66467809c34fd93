// Connection-management messages exchanged on a fresh TCP connection before the data stream
// starts: the connector sends a request, the listener answers accept or reject. Each carries
// up to kMaxCmData bytes of application CM data.
#ifndef PROV_TCP_TCP_CM_MESSAGE_H
#define PROV_TCP_TCP_CM_MESSAGE_H

#include "prov/tcp/tcp_provider.h"

#include <cstddef>
#include <cstdint>

namespace tcp {

enum class CmType : uint8_t { request = 1, accept = 2, reject = 3 };

inline constexpr size_t kCmHeaderSize = 8;
inline constexpr uint32_t kCmMagic = 0x7463706dU;   // "tcpm"
inline constexpr uint8_t kWireVersionForCm = 1;

// Header: magic (4 bytes LE), version (1), type (1), data length (2 LE).
void encode_cm_header(CmType type, uint16_t data_len, uint8_t out[kCmHeaderSize]);
// Returns 0 or -FI_EIO for a foreign or malformed header (wrong magic/version/type, data
// longer than kMaxCmData).
int decode_cm_header(const uint8_t in[kCmHeaderSize], CmType *type, uint16_t *data_len);

// Accumulates one CM message from a non-blocking socket.
class CmReader {
public:
	// Reads what is available. Returns 1 when a whole message is in, 0 when more is needed,
	// or -FI_E* (peer closed, socket error, malformed header).
	int read_from(int fd);
	CmType type() const { return type_; }
	bool started() const { return got_ > 0; }
	const uint8_t *data() const { return buf_ + kCmHeaderSize; }
	size_t data_len() const { return data_len_; }

private:
	uint8_t buf_[kCmHeaderSize + kMaxCmData]{};
	size_t got_ = 0;
	bool header_done_ = false;
	CmType type_ = CmType::request;
	uint16_t data_len_ = 0;
};

// Sends a whole CM message on a socket that has just connected (the message is far smaller
// than any socket buffer, so a short write is treated as an error). Returns 0 or -FI_E*.
int send_cm_message(int fd, CmType type, const void *data, size_t len);

} // namespace tcp

#endif
