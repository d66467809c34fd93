#include "prov/tcp/tcp_wire.h"

#include <rdma/fi_errno.h>

namespace tcp {
namespace {

// Layout offsets of the fixed header; see README.md.
constexpr size_t kOffVersion = 0, kOffOp = 1, kOffFlags = 2, kOffStatus = 4, kOffSize = 8,
		 kOffId = 16, kOffCqData = 24, kOffKey = 32, kOffOffset = 40;

void put_le(uint8_t *p, uint64_t v, size_t bytes)
{
	for (size_t i = 0; i < bytes; i++)
		p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t *p, size_t bytes)
{
	uint64_t v = 0;
	for (size_t i = 0; i < bytes; i++)
		v |= static_cast<uint64_t>(p[i]) << (8 * i);
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
	put_le(out + kOffFlags, h.flags, 2);
	put_le(out + kOffStatus, static_cast<uint32_t>(h.status), 4);
	put_le(out + kOffSize, h.size, 8);
	put_le(out + kOffId, h.id, 8);
	put_le(out + kOffCqData, h.cq_data, 8);
	put_le(out + kOffKey, h.rma_key, 8);
	put_le(out + kOffOffset, h.rma_offset, 8);
}

int decode_header(const uint8_t in[kWireHeaderSize], uint64_t max_payload, WireHeader *h)
{
	if (in[kOffVersion] != kWireVersion)
		return -FI_EIO;
	uint8_t op = in[kOffOp];
	if (op < static_cast<uint8_t>(WireOp::msg) || op > static_cast<uint8_t>(WireOp::ack))
		return -FI_EIO;
	h->op = static_cast<WireOp>(op);
	h->flags = static_cast<uint16_t>(get_le(in + kOffFlags, 2));
	if (h->flags & ~kWireKnownFlags)
		return -FI_EIO;
	h->status = static_cast<int32_t>(static_cast<uint32_t>(get_le(in + kOffStatus, 4)));
	if (h->status > 0 || h->status < -kMaxStatusErrno)
		return -FI_EIO;
	h->size = get_le(in + kOffSize, 8);
	h->id = get_le(in + kOffId, 8);
	h->cq_data = get_le(in + kOffCqData, 8);
	h->rma_key = get_le(in + kOffKey, 8);
	h->rma_offset = get_le(in + kOffOffset, 8);

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
