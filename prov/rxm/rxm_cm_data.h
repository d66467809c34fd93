// Connection-setup data rxm exchanges through the core's fi_connect/fi_accept/fi_reject
// parameters. It carries what each side must know before the first message: the protocol
// version, the eager size and initial credits it grants, and the endpoint's identity (the
// address peers insert into their AV plus a random id chosen at endpoint open), which lets the
// receiver of a connection request find the AV entry of the requester (FI_SOURCE), resolve
// simultaneous connects and recognise a restarted peer.
#ifndef OFI_PROV_RXM_CM_DATA_H
#define OFI_PROV_RXM_CM_DATA_H

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>

namespace rxm {

constexpr uint8_t kCmVersion = 1;
constexpr size_t kCmMaxNameLen = 32; // large enough for sockaddr_in6 and IB addresses
constexpr size_t kCmFixedSize = 16;
constexpr size_t kCmMaxSize = kCmFixedSize + kCmMaxNameLen + 8; // + endpoint id

// Who an rxm endpoint is: the name peers insert (the passive endpoint's address) and a random
// id that changes when the endpoint is reopened.
struct EndpointIdentity {
	uint8_t name[kCmMaxNameLen] = {};
	uint8_t name_len = 0;
	uint64_t endpoint_id = 0;

	std::span<const uint8_t> name_bytes() const { return {name, name_len}; }
	bool same_name(std::span<const uint8_t> other) const
	{
		return other.size() == name_len && std::memcmp(other.data(), name, name_len) == 0;
	}
};

// Total order on identities used as the simultaneous-connect tie breaker.
int compare_identity(const EndpointIdentity &a, const EndpointIdentity &b);
bool operator==(const EndpointIdentity &a, const EndpointIdentity &b);

// Why a connection request was rejected: the requester reacts differently to each.
enum class RejectReason : uint8_t {
	none = 0,
	simultaneous = 1, // the rejecting side's own connection to the requester wins; wait for it
	duplicate = 2,    // a connection already exists; use it
	bad_request = 3,  // cm data was malformed or of another version
};

struct CmData {
	uint8_t version = kCmVersion;
	RejectReason reject_reason = RejectReason::none;
	uint16_t credits = 0;    // 0: the sender does not use credit flow control
	uint32_t eager_size = 0; // largest eager payload the sender accepts
	uint32_t conn_id = 0;    // to be stamped on every message sent to the sender, 0: none
	EndpointIdentity identity;
};

// Returns the encoded length (<= kCmMaxSize); out must hold kCmMaxSize bytes.
size_t encode_cm_data(const CmData &cm, uint8_t *out);
// Accepts trailing bytes, since some cores (rdma_cm) pad connection data. Returns 0 or -FI_EIO.
int decode_cm_data(std::span<const uint8_t> bytes, CmData *cm);

} // namespace rxm

#endif
