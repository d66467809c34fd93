// libFuzzer target: rxm's connection data, which arrives from whoever connects to the
// listener. Whatever decodes must fit the identity buffer and re-encode to a prefix of the input.
#include "prov/rxm/rxm_cm_data.h"

#include <cstdlib>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	std::vector<uint8_t> bytes(data, data + size);
	rxm::CmData cm;
	if (rxm::decode_cm_data(bytes, &cm) != 0)
		return 0;
	if (cm.identity.name_len > rxm::kCmMaxNameLen)
		abort();
	uint8_t again[rxm::kCmMaxSize];
	size_t len = rxm::encode_cm_data(cm, again);
	rxm::CmData cm2;
	if (len > rxm::kCmMaxSize || rxm::decode_cm_data(std::span<const uint8_t>(again, len), &cm2))
		abort();
	if (!(cm2.identity == cm.identity) || cm2.credits != cm.credits ||
	    cm2.eager_size != cm.eager_size || cm2.reject_reason != cm.reject_reason)
		abort();
	return 0;
}
