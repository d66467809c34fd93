// The tcp provider's wire protocol: every operation on a connection starts with one fixed-size
// header, optionally followed by a payload. Headers come from an untrusted peer, so decoding
// validates every field before any of it is used (see README.md for the format).
#ifndef PROV_TCP_TCP_WIRE_H
#define PROV_TCP_TCP_WIRE_H

#include <cstddef>
#include <cstdint>

namespace tcp {

inline constexpr uint8_t kWireVersion = 1;
inline constexpr size_t kWireHeaderSize = 48;

enum class WireOp : uint8_t {
	msg = 1,          // payload = message bytes for the peer's next receive
	write = 2,        // payload = bytes for registered memory (rma_key, rma_offset)
	read_request = 3, // no payload; asks for `size` bytes at (rma_key, rma_offset)
	read_response = 4,// payload = the requested bytes; answers request `id`
	ack = 5,          // no payload; completes request `id` (status carries -FI_E* or 0)
};

// Header flag bits.
inline constexpr uint16_t kWireFlagRemoteData = 1u << 0;   // cq_data is valid
inline constexpr uint16_t kWireFlagWantAck = 1u << 1;      // reply with an ack for `id`
inline constexpr uint16_t kWireKnownFlags = kWireFlagRemoteData | kWireFlagWantAck;

struct WireHeader {
	WireOp op = WireOp::msg;
	uint16_t flags = 0;
	int32_t status = 0;      // 0 or a negative FI_E* code (ack, read_response)
	uint64_t size = 0;       // payload length; for read_request the requested length
	uint64_t id = 0;         // initiator's request id, echoed by ack/read_response
	uint64_t cq_data = 0;
	uint64_t rma_key = 0;
	uint64_t rma_offset = 0;
};

// The short form of a plain message's header (no remote CQ data, no ack wanted, a payload
// under 4 GiB): version u8 | op u8 (kWireOpShortMsg) | flags u16 (0) | size u32. Sent by the
// one-shot sends (framed sends, injects at once): at 64 B over rxm the message is 128 bytes
// instead of 168, and every byte costs the kernel time on the way (loopback ping-pong,
// tcp_baseline: +0.05 us per half round trip from 128 to 168 bytes). Decoded into a
// WireHeader with op msg and everything else 0.
inline constexpr size_t kShortHeaderSize = 8;
inline constexpr uint8_t kWireOpShortMsg = 6;

// The length of the header whose first kHeaderSizeBytes are at `start` (either form; an
// invalid header is found by decode_header).
inline constexpr size_t kHeaderSizeBytes = 2;
inline size_t header_size(const uint8_t *start)
{
	return start[1] == kWireOpShortMsg ? kShortHeaderSize : kWireHeaderSize;
}

// Encodes `h` into exactly kWireHeaderSize bytes (little-endian, fixed layout).
void encode_header(const WireHeader &h, uint8_t out[kWireHeaderSize]);
// Encodes the short header of a plain message of `size` bytes (kShortHeaderSize bytes).
void encode_short_msg_header(uint32_t size, uint8_t out[kShortHeaderSize]);

// Decodes and validates header_size(in) bytes at `in`. Returns 0 or -FI_EIO (bad version,
// unknown op or flags, a payload where the op allows none, a status outside the error range).
// `max_payload` bounds the payload size a peer may announce.
int decode_header(const uint8_t *in, uint64_t max_payload, WireHeader *h);

// True for ops that carry `size` payload bytes after the header.
bool op_has_payload(WireOp op);

} // namespace tcp

#endif
