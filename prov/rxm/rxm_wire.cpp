// Encoding and strict decoding of rxm wire messages (see rxm_wire.h and README.md).
#include "prov/rxm/rxm_wire.h"

#include "prov/rxm/rxm_bytes.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

namespace rxm {

void encode_header(const WireHeader &hdr, uint8_t *out)
{
	put_u8(out + 0, hdr.version);
	put_u8(out + 1, static_cast<uint8_t>(hdr.op));
	put_u16(out + 2, hdr.flags);
	put_u32(out + 4, hdr.payload_len);
	put_u64(out + 8, hdr.tag);
	put_u64(out + 16, hdr.cq_data);
	put_u64(out + 24, hdr.msg_id);
	put_u64(out + 32, hdr.total_len);
	put_u64(out + 40, hdr.offset);
	put_u32(out + 48, hdr.conn_id);
	put_u16(out + 52, hdr.credits);
	put_u16(out + 54, 0);
}

void stamp_conn_id(uint8_t *encoded_header, uint32_t conn_id)
{
	put_u32(encoded_header + 48, conn_id);
}

void stamp_credits(uint8_t *encoded_header, uint16_t credits)
{
	put_u16(encoded_header + 52, credits);
}

void stamp_flags(uint8_t *encoded_header, uint16_t flags)
{
	put_u16(encoded_header + 2, get_u16(encoded_header + 2) | flags);
}

// Per-operation consistency of the header fields with the payload it announces.
static bool header_is_consistent(const WireHeader &h)
{
	if ((h.flags & wire_flag::cma) && h.op != WireOp::rndv_request && h.op != WireOp::rndv_done)
		return false;
	if ((h.flags & wire_flag::cma_only) &&
	    (h.op != WireOp::rndv_request || !(h.flags & wire_flag::cma)))
		return false;
	if ((h.flags & wire_flag::rndv_invalidate) &&
	    (h.op != WireOp::rndv_request || h.payload_len < rndv_payload_size(1) ||
	     (h.flags & (wire_flag::rndv_write | wire_flag::cma_only))))
		return false;
	switch (h.op) {
	case WireOp::eager:
		return h.total_len == h.payload_len && h.offset == 0;
	case WireOp::sar_segment:
		// offset + payload_len <= total_len, written so it cannot overflow.
		if (h.offset > h.total_len || h.payload_len > h.total_len - h.offset)
			return false;
		if (h.flags & wire_flag::last_segment)
			return h.offset + h.payload_len == h.total_len;
		return h.payload_len > 0;
	case WireOp::rndv_request:
	case WireOp::rndv_write_ready: {
		// A same-host offer (rxm_cma.h, 64 bytes) may follow a request's segments.
		size_t extra = (h.flags & wire_flag::cma) ? kCmaOfferSize : 0;
		return h.payload_len >= rndv_payload_size(1) + extra &&
		       h.payload_len <= rndv_payload_size(kRndvMaxSegments) + extra && h.offset == 0;
	}
	case WireOp::rndv_done:
	case WireOp::delivery_ack:
		return h.payload_len == 0;
	case WireOp::credit_update:
		return h.payload_len == 0 && h.offset > 0 && h.offset <= UINT32_MAX;
	case WireOp::atomic_request:
		return h.payload_len >= kAtomicRequestFixedSize;
	case WireOp::atomic_response:
		return h.payload_len >= kAtomicResponseFixedSize;
	case WireOp::collective:
		// Steps are 32 bits (util::coll::Group); the payload is the whole message.
		return h.total_len == h.payload_len && h.offset <= UINT32_MAX;
	case WireOp::shm_offer:
		return h.payload_len == kShmOfferSize && h.total_len == 0 && h.offset == 0;
	case WireOp::shm_moved:
		return h.payload_len == 0 && h.total_len == 0 && h.offset == 0;
	}
	return false;
}

int decode_message(std::span<const uint8_t> message, WireHeader *hdr)
{
	if (message.size() < kWireHeaderSize)
		return -FI_EIO;
	return decode_message_header(message.data(), message.size(), hdr);
}

int decode_message_header(const uint8_t *p, size_t message_size, WireHeader *hdr)
{
	if (message_size < kWireHeaderSize)
		return -FI_EIO;
	WireHeader h;
	h.version = get_u8(p + 0);
	uint8_t op = get_u8(p + 1);
	h.flags = get_u16(p + 2);
	h.payload_len = get_u32(p + 4);
	h.tag = get_u64(p + 8);
	h.cq_data = get_u64(p + 16);
	h.msg_id = get_u64(p + 24);
	h.total_len = get_u64(p + 32);
	h.offset = get_u64(p + 40);
	h.conn_id = get_u32(p + 48);
	h.credits = get_u16(p + 52);
	if (get_u16(p + 54) != 0)
		return -FI_EIO;

	if (h.version != kWireVersion || op < kWireOpFirst || op > kWireOpLast)
		return -FI_EIO;
	h.op = static_cast<WireOp>(op);
	if (h.flags & ~wire_flag::all)
		return -FI_EIO;
	if (h.payload_len != message_size - kWireHeaderSize)
		return -FI_EIO;
	if (!header_is_consistent(h))
		return -FI_EIO;
	*hdr = h;
	return 0;
}

void encode_rndv(std::span<const RndvSegment> segments, uint8_t *out)
{
	put_u32(out, static_cast<uint32_t>(segments.size()));
	put_u32(out + 4, 0);
	uint8_t *p = out + 8;
	for (const RndvSegment &s : segments) {
		put_u64(p, s.addr);
		put_u64(p + 8, s.len);
		put_u64(p + 16, s.key);
		p += 24;
	}
}

int decode_rndv(std::span<const uint8_t> payload, uint64_t total_len,
		RndvSegment (&segments)[kRndvMaxSegments], size_t *count)
{
	if (payload.size() < 8)
		return -FI_EIO;
	uint32_t n = get_u32(payload.data());
	if (n == 0 || n > kRndvMaxSegments || payload.size() != rndv_payload_size(n) ||
	    get_u32(payload.data() + 4) != 0)
		return -FI_EIO;
	uint64_t sum = 0;
	const uint8_t *p = payload.data() + 8;
	for (uint32_t i = 0; i < n; i++, p += 24) {
		segments[i] = {get_u64(p), get_u64(p + 8), get_u64(p + 16)};
		if (segments[i].len > total_len - sum)
			return -FI_EIO;
		sum += segments[i].len;
	}
	if (sum != total_len)
		return -FI_EIO;
	*count = n;
	return 0;
}

size_t atomic_datatype_size(uint8_t datatype)
{
	switch (datatype) {
	case FI_INT8:
	case FI_UINT8:
		return 1;
	case FI_INT16:
	case FI_UINT16:
		return 2;
	case FI_INT32:
	case FI_UINT32:
	case FI_FLOAT:
		return 4;
	case FI_INT64:
	case FI_UINT64:
	case FI_DOUBLE:
		return 8;
	default:
		return 0;
	}
}

void encode_atomic_request(const AtomicRequest &req, uint8_t *out)
{
	put_u8(out, req.op);
	put_u8(out + 1, req.datatype);
	put_u16(out + 2, req.extra_count);
	put_u32(out + 4, req.count);
	put_u64(out + 8, req.addr);
	put_u64(out + 16, req.key);
	uint8_t *p = out + kAtomicRequestFixedSize;
	for (uint16_t i = 0; i < req.extra_count; i++, p += kAtomicTargetSize) {
		put_u64(p, req.extra[i].addr);
		put_u64(p + 8, req.extra[i].key);
		put_u32(p + 16, req.extra[i].count);
		put_u32(p + 20, 0);
	}
}

static bool is_compare_op(uint8_t op) { return op >= FI_CSWAP && op <= FI_MSWAP; }

int decode_atomic_request(std::span<const uint8_t> payload, uint16_t flags, AtomicRequest *req,
			  std::span<const uint8_t> *operand, std::span<const uint8_t> *compare)
{
	if (payload.size() < kAtomicRequestFixedSize)
		return -FI_EIO;
	const uint8_t *p = payload.data();
	AtomicRequest r{get_u8(p), get_u8(p + 1), get_u32(p + 4), get_u64(p + 8), get_u64(p + 16)};
	r.extra_count = get_u16(p + 2);
	if (r.extra_count >= kAtomicMaxTargets || r.op >= FI_ATOMIC_OP_LAST || r.count == 0)
		return -FI_EIO;
	size_t head = atomic_request_head_size(r);
	if (payload.size() < head)
		return -FI_EIO;
	for (uint16_t i = 0; i < r.extra_count; i++) {
		const uint8_t *t = p + kAtomicRequestFixedSize + i * kAtomicTargetSize;
		r.extra[i] = {get_u64(t), get_u64(t + 8), get_u32(t + 16)};
		if (r.extra[i].count == 0 || get_u32(t + 20) != 0)
			return -FI_EIO;
	}
	size_t elem = atomic_datatype_size(r.datatype);
	if (elem == 0)
		return -FI_EIO;
	bool wants_compare = (flags & wire_flag::atomic_compare) != 0;
	bool wants_fetch = (flags & wire_flag::atomic_fetch) != 0;
	if (wants_compare != is_compare_op(r.op))
		return -FI_EIO;
	if ((r.op == FI_ATOMIC_READ || is_compare_op(r.op)) && !wants_fetch)
		return -FI_EIO;
	// A read carries no operand; compare ops carry operands and compare values.
	uint64_t total = r.total_count();
	uint64_t operand_len = r.op == FI_ATOMIC_READ ? 0 : total * elem;
	uint64_t compare_len = wants_compare ? total * elem : 0;
	if (payload.size() - head != operand_len + compare_len)
		return -FI_EIO;
	*req = r;
	*operand = payload.subspan(head, operand_len);
	*compare = payload.subspan(head + operand_len, compare_len);
	return 0;
}

void encode_atomic_response(int32_t status, uint8_t *out)
{
	put_u32(out, static_cast<uint32_t>(status));
	put_u32(out + 4, 0);
}

int decode_atomic_response(std::span<const uint8_t> payload, int32_t *status,
			   std::span<const uint8_t> *fetched)
{
	if (payload.size() < kAtomicResponseFixedSize || get_u32(payload.data() + 4) != 0)
		return -FI_EIO;
	int32_t s = static_cast<int32_t>(get_u32(payload.data()));
	if (s > 0)
		return -FI_EIO; // statuses are 0 or negative error codes
	*status = s;
	*fetched = payload.subspan(kAtomicResponseFixedSize);
	return 0;
}

} // namespace rxm
