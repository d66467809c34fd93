#include "prov/tcp/tcp_wire.h"

#include <rdma/fi_errno.h>

#include <bit>
#include <cstring>

namespace tcp {
namespace {

// Layout offsets of the fixed header; see README.md.
constexpr size_t kOffVersion = 0, kOffOp = 1, kOffFlags = 2, kOffStatus = 4, kOffSize = 8,
		 kOffId = 16, kOffCqData = 24, kOffKey = 32, kOffOffset = 40;

// Fixed-width little-endian fields, one load or store each (a byte loop per field cost
// ~350 instructions per header in the ping-pong profile).
// std::byteswap is C++23.
inline uint16_t swap_bytes(uint16_t v) { return __builtin_bswap16(v); }
inline uint32_t swap_bytes(uint32_t v) { return __builtin_bswap32(v); }
inline uint64_t swap_bytes(uint64_t v) { return __builtin_bswap64(v); }

template <class T>
void put_le(uint8_t *p, T v)
{
	if constexpr (std::endian::native == std::endian::big)
		v = swap_bytes(v);
	std::memcpy(p, &v, sizeof(v));
}

template <class T>
T get_le(const uint8_t *p)
{
	T v;
	std::memcpy(&v, p, sizeof(v));
	if constexpr (std::endian::native == std::endian::big)
		v = swap_bytes(v);
	return v;
}

// The largest errno value we accept in a status field; larger values are not FI_E* codes.
constexpr int32_t kMaxStatusErrno = 1 << 16;

} // namespace

bool op_has_payload(WireOp op)
{
	return op == WireOp::msg || op == WireOp::write || op == WireOp::read_response;
}

void encode_header(const WireHeader &h, uint8_t out[kWireHeaderSize])
{
	out[kOffVersion] = kWireVersion;
	out[kOffOp] = static_cast<uint8_t>(h.op);
	put_le<uint16_t>(out + kOffFlags, h.flags);
	put_le<uint32_t>(out + kOffStatus, static_cast<uint32_t>(h.status));
	put_le<uint64_t>(out + kOffSize, h.size);
	put_le<uint64_t>(out + kOffId, h.id);
	put_le<uint64_t>(out + kOffCqData, h.cq_data);
	put_le<uint64_t>(out + kOffKey, h.rma_key);
	put_le<uint64_t>(out + kOffOffset, h.rma_offset);
}

void encode_short_msg_header(uint32_t size, uint8_t out[kShortHeaderSize])
{
	out[kOffVersion] = kWireVersion;
	out[kOffOp] = kWireOpShortMsg;
	put_le<uint16_t>(out + kOffFlags, 0);
	put_le<uint32_t>(out + kOffStatus, size);
}

int decode_header(const uint8_t *in, uint64_t max_payload, WireHeader *h)
{
	if (in[kOffVersion] != kWireVersion)
		return -FI_EIO;
	uint8_t op = in[kOffOp];
	if (op == kWireOpShortMsg) {
		// Only these 8 bytes were read for it: flags must be 0, the size is u32.
		if (get_le<uint16_t>(in + kOffFlags) != 0)
			return -FI_EIO;
		uint64_t size = get_le<uint32_t>(in + kOffStatus);
		if (size > max_payload)
			return -FI_EIO;
		*h = WireHeader{};
		h->op = WireOp::msg;
		h->size = size;
		return 0;
	}
	if (op < static_cast<uint8_t>(WireOp::msg) || op > static_cast<uint8_t>(WireOp::ack))
		return -FI_EIO;
	h->op = static_cast<WireOp>(op);
	h->flags = get_le<uint16_t>(in + kOffFlags);
	if (h->flags & ~kWireKnownFlags)
		return -FI_EIO;
	h->status = static_cast<int32_t>(get_le<uint32_t>(in + kOffStatus));
	if (h->status > 0 || h->status < -kMaxStatusErrno)
		return -FI_EIO;
	h->size = get_le<uint64_t>(in + kOffSize);
	h->id = get_le<uint64_t>(in + kOffId);
	h->cq_data = get_le<uint64_t>(in + kOffCqData);
	h->rma_key = get_le<uint64_t>(in + kOffKey);
	h->rma_offset = get_le<uint64_t>(in + kOffOffset);

	if (op_has_payload(h->op) && h->size > max_payload)
		return -FI_EIO;
	if (h->op == WireOp::read_request && h->size > max_payload)
		return -FI_EIO;
	if (h->op == WireOp::ack && h->size != 0)
		return -FI_EIO;
	// A failed read answers with no data; a successful one with exactly what was asked,
	// which the initiator checks against its request.
	if (h->op == WireOp::read_response && h->status != 0 && h->size != 0)
		return -FI_EIO;
	// Only requests may carry a status of zero meaningfully; a request with an error is bogus.
	if ((h->op == WireOp::msg || h->op == WireOp::write || h->op == WireOp::read_request) &&
	    h->status != 0)
		return -FI_EIO;
	if (h->op != WireOp::msg && h->op != WireOp::write && (h->flags & kWireFlagRemoteData))
		return -FI_EIO;
	return 0;
}

} // namespace tcp
