// libFuzzer target: rxm's message decoders. A core message from a peer is decoded as a
// header, and its payload as a rendezvous descriptor or an atomic request/response. Each
// decoder gets an exact-size heap copy so AddressSanitizer catches reads past the message.
#include "prov/rxm/rxm_wire.h"

#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::vector<uint8_t> message(data, data + size);
	rxm::WireHeader hdr;
	if (rxm::decode_message(message, &hdr) == 0) {
		if (hdr.payload_len > size)
			abort();  // announced more payload than the message holds
	}
	// The payload decoders are also reached with whatever follows a valid header; fuzz them on
	// the raw bytes too, with header fields taken from the front of the input.
	if (size < 9)
		return 0;
	uint64_t total_len = 0;
	for (int i = 0; i < 8; i++)
		total_len |= static_cast<uint64_t>(data[i]) << (8 * i);
	std::vector<uint8_t> payload(data + 9, data + size);
	rxm::RndvSegment segments[rxm::kRndvMaxSegments];
	size_t count = 0;
	if (rxm::decode_rndv(payload, total_len, segments, &count) == 0) {
		if (count > rxm::kRndvMaxSegments)
			abort();
		uint64_t sum = 0;
		for (size_t i = 0; i < count; i++)
			sum += segments[i].len;
		if (sum != total_len)
			abort();
	}
	uint16_t flags = static_cast<uint16_t>(data[8] | (data[0] << 8)) & rxm::wire_flag::all;
	rxm::AtomicRequest req;
	std::span<const uint8_t> operand, compare;
	if (rxm::decode_atomic_request(payload, flags, &req, &operand, &compare) == 0) {
		size_t elem = rxm::atomic_datatype_size(req.datatype);
		if (elem == 0)
			abort();  // accepted a datatype it cannot size
		auto inside = [&](std::span<const uint8_t> s) {
			return s.empty() || (s.data() >= payload.data() &&
					     s.data() + s.size() <= payload.data() + payload.size());
		};
		if (!inside(operand) || !inside(compare))
			abort();
	}
	int32_t status;
	std::span<const uint8_t> fetched;
	if (rxm::decode_atomic_response(payload, &status, &fetched) == 0) {
		if (!fetched.empty() && fetched.data() + fetched.size() > payload.data() + payload.size())
			abort();
	}
	return 0;
}
