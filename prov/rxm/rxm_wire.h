// The ofi_rxm wire protocol: every message rxm sends over a core MSG connection starts with a
// fixed 48-byte header (layout in README.md). A peer's bytes are untrusted, so decoding checks
// every field before anything else looks at it.
#ifndef OFI_PROV_RXM_WIRE_H
#define OFI_PROV_RXM_WIRE_H

#include "prov/rxm/rxm_bytes.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace rxm {

constexpr uint8_t kWireVersion = 1;
constexpr size_t kWireHeaderSize = 56;

enum class WireOp : uint8_t {
	eager = 1,        // whole message inline
	sar_segment,      // one piece of a segmented message
	rndv_request,     // sender exposes registered buffers; receiver reads them
	rndv_done,        // receiver finished reading; sender may complete
	credit_update,    // receiver returns flow-control credits
	atomic_request,   // emulated atomic, executed by the target
	atomic_response,  // status (and fetched data) of an atomic request
	delivery_ack,     // FI_DELIVERY_COMPLETE: message was matched and placed
	rndv_write_ready, // write-based rendezvous: receiver exposes its buffers to the sender
	collective,       // one message of a collective (rxm_coll.h): tag = group wire id,
			  // msg_id = sequence, offset = step, payload = data
	shm_offer,        // same-host switch (rxm_shm.h): our shm listener's name and a secret
	shm_moved,        // same-host switch: the last message of this direction on the core
};
constexpr uint8_t kWireOpFirst = static_cast<uint8_t>(WireOp::eager);
constexpr uint8_t kWireOpLast = static_cast<uint8_t>(WireOp::shm_moved);

namespace wire_flag {
constexpr uint16_t remote_cq_data = 1 << 0;    // cq_data is meaningful
constexpr uint16_t tagged = 1 << 1;            // match against tagged receives
constexpr uint16_t last_segment = 1 << 2;      // final SAR segment
constexpr uint16_t delivery_complete = 1 << 3; // sender wants a delivery_ack
constexpr uint16_t atomic_fetch = 1 << 4;      // response carries the old value
constexpr uint16_t atomic_compare = 1 << 5;    // request carries compare operands
constexpr uint16_t rndv_write = 1 << 6;        // rendezvous by sender writes (and its done)
// rndv_request: a same-host offer (rxm_cma.h) follows the segments; rndv_done: the receiver
// pulled the data by process_vm_readv.
constexpr uint16_t cma = 1 << 7;
// rndv_request (with cma): the segments carry no keys, nothing was registered: the peer
// proved it pulls (it answered a pulled done before), so there is no RMA read to fall back
// on; a done without cma fails the send.
constexpr uint16_t cma_only = 1 << 8;
// rndv_request: the one segment's key is a registration the sender bound to this
// connection (OFI_MR_BIND_TO_EP, fi_mr_bind + fi_mr_enable): the receiver's rndv_done may
// invalidate it on the way (OFI_SEND_INVALIDATE, prov/util/mr_bind_flag.h), which spares
// the sender's core a system call when the key is withdrawn.
constexpr uint16_t rndv_invalidate = 1 << 9;
constexpr uint16_t all = (1 << 10) - 1;
} // namespace wire_flag

struct WireHeader {
	uint8_t version = kWireVersion;
	WireOp op = WireOp::eager;
	uint16_t flags = 0;
	uint32_t payload_len = 0; // bytes following the header in this core message
	uint64_t tag = 0;
	uint64_t cq_data = 0;
	uint64_t msg_id = 0;      // sender-chosen id tying segments / rendezvous / atomics together
	uint64_t total_len = 0;   // length of the whole application message
	uint64_t offset = 0;      // SAR: segment offset; credit_update: number of credits
	uint32_t conn_id = 0;     // the receiver's id of this connection (its CM data), 0: none
	// Flow-control credits returned with this message (rxm_flow_ctrl.cpp), any op; 0: none.
	uint16_t credits = 0;
};

// Sets conn_id in an encoded header: it is only known once the connection is up, after the
// message may have been encoded.
void stamp_conn_id(uint8_t *encoded_header, uint32_t conn_id);
// Sets the returned credits in an encoded header, just before it is posted.
void stamp_credits(uint8_t *encoded_header, uint16_t credits);
// Adds flags to an encoded header (what is known only when the message goes out).
void stamp_flags(uint8_t *encoded_header, uint16_t flags);

// Writes exactly kWireHeaderSize bytes.
void encode_header(const WireHeader &hdr, uint8_t *out);

// encode_header of an eager message (msg_id, offset 0; total_len = payload_len = len) as
// fixed stores, inline: the small send writes one per message, straight where it goes.
inline void encode_eager_header(uint8_t *out, uint16_t flags, uint64_t tag, uint64_t cq_data,
				uint32_t len, uint32_t conn_id, uint16_t credits)
{
	put_u8(out + 0, kWireVersion);
	put_u8(out + 1, static_cast<uint8_t>(WireOp::eager));
	put_u16(out + 2, flags);
	put_u32(out + 4, len);
	put_u64(out + 8, tag);
	put_u64(out + 16, cq_data);
	put_u64(out + 24, 0);
	put_u64(out + 32, len);
	put_u64(out + 40, 0);
	put_u32(out + 48, conn_id);
	put_u16(out + 52, credits);
	put_u16(out + 54, 0);
}

// Decodes and validates one received core message (header plus payload). Returns 0 or -FI_EIO
// when the bytes are not a well-formed rxm message.
int decode_message(std::span<const uint8_t> message, WireHeader *hdr);
// The same checks from the header alone (kWireHeaderSize bytes at `header`) of a message of
// message_size bytes whose payload has not arrived yet. Each byte of the header is read once
// (they may lie in a peer's shared memory); *hdr is written only when they are valid.
int decode_message_header(const uint8_t *header, size_t message_size, WireHeader *hdr);

// What the receive of an eager message needs from its header.
struct EagerHeader {
	uint16_t flags;
	uint64_t tag;
	uint64_t cq_data;
	uint64_t msg_id;
};

// decode_message_header's common case, inline: an eager message as encode_eager_header
// writes it (flags at most tagged and remote_cq_data, total_len == payload_len == what
// follows the header, offset and padding 0) is checked with a few fixed loads and compares
// and its fields returned. False for anything else, valid or not: decode_message_header
// then decides. Every header this accepts, decode_message_header accepts with the same
// fields (RxmWire tests); each byte is read once, as there.
inline bool decode_plain_eager(const uint8_t *p, size_t message_size, EagerHeader *out)
{
	if (message_size < kWireHeaderSize || message_size - kWireHeaderSize > UINT32_MAX)
		return false;
	uint64_t payload_len = message_size - kWireHeaderSize;
	// version u8, op u8, flags u16, payload_len u32, little-endian.
	constexpr uint64_t kFlagsAllowed =
		uint64_t(wire_flag::tagged | wire_flag::remote_cq_data) << 16;
	uint64_t first = get_u64(p);
	uint64_t expected = uint64_t(kWireVersion) | uint64_t(WireOp::eager) << 8 |
			    payload_len << 32;
	if ((first & ~kFlagsAllowed) != expected || get_u64(p + 32) != payload_len ||
	    get_u64(p + 40) != 0 || get_u16(p + 54) != 0)
		return false;
	out->flags = static_cast<uint16_t>(first >> 16);
	out->tag = get_u64(p + 8);
	out->cq_data = get_u64(p + 16);
	out->msg_id = get_u64(p + 24);
	return true;
}

// The WireHeader decode_message_header gives for a header decode_plain_eager accepted.
inline WireHeader plain_eager_header(const EagerHeader &e, size_t payload_len)
{
	WireHeader h;
	h.flags = e.flags;
	h.payload_len = static_cast<uint32_t>(payload_len);
	h.tag = e.tag;
	h.cq_data = e.cq_data;
	h.msg_id = e.msg_id;
	h.total_len = payload_len;
	return h;
}

// msg_id of a delivery_ack that acknowledges nothing: a liveness probe (rxm_conn.cpp), sent
// to provoke a transport error on a connection whose peer may be gone. Receivers ignore it.
// No send's id takes this value (ids are generation << 32 | pool index).
constexpr uint64_t kLivenessProbeMsgId = ~0ULL;

// Rendezvous request payload: the sender's registered buffers.
struct RndvSegment {
	uint64_t addr;
	uint64_t len;
	uint64_t key;
};
constexpr size_t kRndvMaxSegments = 4;
constexpr size_t rndv_payload_size(size_t count) { return 8 + 24 * count; }
// Size of the same-host offer that follows the segments of a request flagged wire_flag::cma.
constexpr size_t kCmaOfferSize = 64;
// Payload of shm_offer: the NUL-padded name of the sender's shm listener (32 bytes, shm's
// fixed address length), the 16-byte secret a connector must present, the sender's id of
// the connection (u32; the CM data has it only with shared receive contexts) and 4 zero
// bytes (rxm_shm.h).
constexpr size_t kShmNameSize = 32;
constexpr size_t kShmSecretSize = 16;
constexpr size_t kShmOfferSize = kShmNameSize + kShmSecretSize + 8;
void encode_rndv(std::span<const RndvSegment> segments, uint8_t *out);
// Checks that the segments sum to total_len; returns 0 or -FI_EIO.
int decode_rndv(std::span<const uint8_t> payload, uint64_t total_len,
		RndvSegment (&segments)[kRndvMaxSegments], size_t *count);

// Atomic request payload: fixed part (the first target), the further targets, then the
// operands of all targets in order, then as many compare values.
// Fixed part: op u8, datatype u8, extra target count u16, count u32, addr u64, key u64.
// Each further target (fi_atomicmsg with rma_iov_count > 1): addr u64, key u64, count u32,
// zero u32.
constexpr size_t kAtomicMaxTargets = 4;
struct AtomicTarget {
	uint64_t addr = 0;
	uint64_t key = 0;
	uint32_t count = 0;
};
struct AtomicRequest {
	uint8_t op;        // enum fi_op
	uint8_t datatype;  // enum fi_datatype
	uint32_t count;    // elements of the first target
	uint64_t addr;     // first target address (or offset, per the target's MR mode)
	uint64_t key;      // first target MR key
	uint16_t extra_count = 0;
	AtomicTarget extra[kAtomicMaxTargets - 1] = {};

	// Elements over all targets.
	uint64_t total_count() const
	{
		uint64_t n = count;
		for (uint16_t i = 0; i < extra_count; i++)
			n += extra[i].count;
		return n;
	}
	AtomicTarget target(size_t i) const { return i ? extra[i - 1] : AtomicTarget{addr, key, count}; }
	size_t target_count() const { return 1 + size_t(extra_count); }
};
constexpr size_t kAtomicRequestFixedSize = 24;
constexpr size_t kAtomicTargetSize = 24;
// Bytes before the operands: the fixed part and the further targets.
inline size_t atomic_request_head_size(const AtomicRequest &req)
{
	return kAtomicRequestFixedSize + size_t(req.extra_count) * kAtomicTargetSize;
}
void encode_atomic_request(const AtomicRequest &req, uint8_t *out);
// Validates op, datatype, the targets (at most kAtomicMaxTargets, none empty) and that the
// payload holds exactly the operands the flags announce for their total count.
// operand/compare point into payload (compare is empty unless atomic_compare).
int decode_atomic_request(std::span<const uint8_t> payload, uint16_t flags, AtomicRequest *req,
			  std::span<const uint8_t> *operand, std::span<const uint8_t> *compare);

// Atomic response payload: a status (0 or -FI_E*) followed by fetched data, if any.
constexpr size_t kAtomicResponseFixedSize = 8;
void encode_atomic_response(int32_t status, uint8_t *out);
int decode_atomic_response(std::span<const uint8_t> payload, int32_t *status,
			   std::span<const uint8_t> *fetched);

// Size in bytes of one element of an fi_datatype rxm can emulate, 0 for others.
size_t atomic_datatype_size(uint8_t datatype);

} // namespace rxm

#endif
