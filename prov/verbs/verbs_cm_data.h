// Connection private data on the wire. rdma_cm pads private data to a fixed size on IB
// and RoCE, so the receiver cannot tell how much the peer sent; a small header carries
// the real length. Bytes from the peer are untrusted and checked before use.
#ifndef OFI_PROV_VERBS_CM_DATA_H
#define OFI_PROV_VERBS_CM_DATA_H

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace verbs {

// The smallest private data limit rdma_cm has on IB/RoCE (the connect request's).
inline constexpr size_t kRdmaCmPrivateDataMax = 56;
inline constexpr size_t kCmDataHeaderSize = 4;
// What FI_OPT_CM_DATA_SIZE reports: the user's share of the private data.
inline constexpr size_t kCmDataMax = kRdmaCmPrivateDataMax - kCmDataHeaderSize;

// Header + user bytes; nullopt if the user data is too long.
std::optional<std::vector<uint8_t>> encode_cm_data(const void *data, size_t len);

// The user bytes inside raw private data; nullopt if the header is missing or lies.
// Absent private data (raw_len 0) decodes to no bytes.
std::optional<std::vector<uint8_t>> decode_cm_data(const void *raw, size_t raw_len);

} // namespace verbs

#endif
