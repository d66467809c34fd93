// Encoding of rxm's connection-setup data (layout in README.md).
#include "prov/rxm/rxm_cm_data.h"

#include "prov/rxm/rxm_bytes.h"

#include <rdma/fi_errno.h>

namespace rxm {

int compare_identity(const EndpointIdentity &a, const EndpointIdentity &b)
{
	size_t common = a.name_len < b.name_len ? a.name_len : b.name_len;
	int c = std::memcmp(a.name, b.name, common);
	if (c != 0)
		return c < 0 ? -1 : 1;
	if (a.name_len != b.name_len)
		return a.name_len < b.name_len ? -1 : 1;
	if (a.endpoint_id != b.endpoint_id)
		return a.endpoint_id < b.endpoint_id ? -1 : 1;
	return 0;
}

bool operator==(const EndpointIdentity &a, const EndpointIdentity &b)
{
	return compare_identity(a, b) == 0;
}

size_t encode_cm_data(const CmData &cm, uint8_t *out)
{
	put_u8(out, cm.version);
	put_u8(out + 1, static_cast<uint8_t>(cm.reject_reason));
	put_u8(out + 2, cm.identity.name_len);
	put_u8(out + 3, 0);
	put_u16(out + 4, cm.credits);
	put_u16(out + 6, 0);
	put_u32(out + 8, cm.eager_size);
	put_u32(out + 12, cm.conn_id);
	// The id goes after the name so the fixed part stays 16 bytes with 4-byte fields.
	std::memcpy(out + kCmFixedSize, cm.identity.name, cm.identity.name_len);
	size_t len = kCmFixedSize + cm.identity.name_len;
	put_u64(out + len, cm.identity.endpoint_id);
	return len + 8;
}

int decode_cm_data(std::span<const uint8_t> bytes, CmData *cm)
{
	if (bytes.size() < kCmFixedSize + 8)
		return -FI_EIO;
	const uint8_t *p = bytes.data();
	CmData c;
	c.version = get_u8(p);
	uint8_t reason = get_u8(p + 1);
	c.identity.name_len = get_u8(p + 2);
	c.credits = get_u16(p + 4);
	c.eager_size = get_u32(p + 8);
	c.conn_id = get_u32(p + 12);
	if (c.version != kCmVersion || reason > static_cast<uint8_t>(RejectReason::bad_request))
		return -FI_EIO;
	if (c.identity.name_len > kCmMaxNameLen ||
	    bytes.size() < kCmFixedSize + c.identity.name_len + 8)
		return -FI_EIO;
	c.reject_reason = static_cast<RejectReason>(reason);
	std::memcpy(c.identity.name, p + kCmFixedSize, c.identity.name_len);
	c.identity.endpoint_id = get_u64(p + kCmFixedSize + c.identity.name_len);
	*cm = c;
	return 0;
}

} // namespace rxm
