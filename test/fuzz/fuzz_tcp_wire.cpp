// libFuzzer target: the tcp provider's data-stream header decoder. Every header a peer sends
// passes through decode_header; whatever it accepts must re-encode to the same bytes (so no
// field is silently reinterpreted) and must respect the payload bound.
#include "prov/tcp/tcp_wire.h"

#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < tcp::kWireHeaderSize + 1)
		return 0;
	// The first byte picks the payload bound the receiver would apply.
	const uint64_t bounds[] = {0, 1, 16384, 1ULL << 30, ~0ULL};
	uint64_t max_payload = bounds[data[0] % 5];
	// An exact-size heap copy lets AddressSanitizer see any read past the header (the
	// short form's 8 bytes, or the full 48).
	std::vector<uint8_t> header(data + 1, data + 1 + tcp::header_size(data + 1));
	tcp::WireHeader h;
	if (tcp::decode_header(header.data(), max_payload, &h) != 0)
		return 0;
	if (tcp::op_has_payload(h.op) && h.size > max_payload)
		abort();  // accepted a payload larger than the receiver allows
	uint8_t again[tcp::kWireHeaderSize];
	tcp::encode_header(h, again);
	tcp::WireHeader h2;
	if (tcp::decode_header(again, max_payload, &h2) != 0)
		abort();  // what was accepted once must be accepted again
	if (h2.op != h.op || h2.flags != h.flags || h2.size != h.size || h2.id != h.id ||
	    h2.status != h.status || h2.rma_key != h.rma_key || h2.rma_offset != h.rma_offset)
		abort();
	return 0;
}
