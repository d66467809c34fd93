#include "prov/verbs/verbs_cm_data.h"

#include <cstring>

namespace verbs {
namespace {

// Layout: magic, version, length (big endian, 16 bits), then the user bytes.
constexpr uint8_t kMagic = 0xFB;
constexpr uint8_t kVersion = 1;

} // namespace

std::optional<std::vector<uint8_t>> encode_cm_data(const void *data, size_t len)
{
	if (len > kCmDataMax || (len > 0 && !data))
		return std::nullopt;
	std::vector<uint8_t> wire(kCmDataHeaderSize + len);
	wire[0] = kMagic;
	wire[1] = kVersion;
	wire[2] = static_cast<uint8_t>(len >> 8);
	wire[3] = static_cast<uint8_t>(len & 0xff);
	if (len)
		std::memcpy(wire.data() + kCmDataHeaderSize, data, len);
	return wire;
}

std::optional<std::vector<uint8_t>> decode_cm_data(const void *raw, size_t raw_len)
{
	if (raw_len == 0 || !raw)
		return std::vector<uint8_t>{};
	if (raw_len < kCmDataHeaderSize)
		return std::nullopt;
	const auto *bytes = static_cast<const uint8_t *>(raw);
	if (bytes[0] != kMagic || bytes[1] != kVersion)
		return std::nullopt;
	size_t len = (static_cast<size_t>(bytes[2]) << 8) | bytes[3];
	if (len > kCmDataMax || len > raw_len - kCmDataHeaderSize)
		return std::nullopt;
	return std::vector<uint8_t>(bytes + kCmDataHeaderSize, bytes + kCmDataHeaderSize + len);
}

} // namespace verbs
