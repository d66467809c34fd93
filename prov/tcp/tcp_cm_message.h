// Connection-management messages exchanged on a fresh TCP connection before the data stream
// starts: the connector sends a request, the listener answers accept or reject. Each carries
// up to kMaxCmData bytes of application CM data.
#ifndef PROV_TCP_TCP_CM_MESSAGE_H
#define PROV_TCP_TCP_CM_MESSAGE_H

#include "prov/tcp/tcp_provider.h"

#include <cstddef>
#include <cstdint>

namespace tcp {

// auth_request: a request from an endpoint with an authorization key (domain_attr or
// ep_attr auth_key): its data is the key's length (1 byte), the key, then the CM data.
enum class CmType : uint8_t { request = 1, accept = 2, reject = 3, auth_request = 4 };
inline constexpr size_t kMaxAuthKey = 64;
inline constexpr size_t kMaxCmMessageData = kMaxCmData + 1 + kMaxAuthKey;

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
	// An auth_request reads as a request carrying key(); data() is the CM data alone.
	CmType type() const { return type_ == CmType::auth_request ? CmType::request : type_; }
	bool started() const { return got_ > 0; }
	const uint8_t *data() const { return buf_ + kCmHeaderSize + key_skip(); }
	size_t data_len() const { return data_len_ - key_skip(); }
	const uint8_t *key() const { return buf_ + kCmHeaderSize + 1; }
	size_t key_len() const { return type_ == CmType::auth_request ? buf_[kCmHeaderSize] : 0; }

private:
	size_t key_skip() const { return type_ == CmType::auth_request ? 1 + key_len() : 0; }
	uint8_t buf_[kCmHeaderSize + kMaxCmMessageData]{};
	size_t got_ = 0;
	bool header_done_ = false;
	CmType type_ = CmType::request;
	uint16_t data_len_ = 0;
};

// Sends a whole CM message on a socket that has just connected (the message is far smaller
// than any socket buffer, so a short write is treated as an error). Returns 0 or -FI_E*.
int send_cm_message(int fd, CmType type, const void *data, size_t len);
// The connection request: an auth_request when key_len > 0, else a plain request.
int send_cm_request(int fd, const uint8_t *key, size_t key_len, const void *data, size_t len);
// Whether a request's key is the one a listener expects (no key on either side also agrees);
// the comparison takes the same time wherever the bytes differ.
bool auth_keys_match(const uint8_t *a, size_t a_len, const uint8_t *b, size_t b_len);

} // namespace tcp

#endif
