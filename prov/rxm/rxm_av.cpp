// RxmAv: table of core addresses with reverse lookup.
#include "prov/rxm/rxm_av.h"

#include "prov/rxm/rxm_domain.h"
#include "prov/util/error.h"
#include "prov/util/sockaddr_util.h"

#include <rdma/fi_errno.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdio>
#include <cstring>
#include <new>

namespace rxm {

std::string canonical_address(const void *addr, size_t len)
{
	// util's AV keys its index the same way (sockaddr_normalize), so names built here
	// find the entries fi_av_insert made.
	if (len >= sizeof(sa_family_t) && util::sockaddr_length(addr) == len) {
		sockaddr_storage normalized;
		util::sockaddr_normalize(addr, &normalized);
		return std::string(reinterpret_cast<const char *>(&normalized), len);
	}
	return std::string(static_cast<const char *>(addr), len);
}

std::string describe_address(std::string_view name)
{
	// Socket addresses print the way every provider prints them; other formats as hex.
	sockaddr_storage sa{};
	if (!name.empty() && name.size() <= sizeof(sa)) {
		memcpy(&sa, name.data(), name.size());
		if (util::sockaddr_length(&sa) == name.size())
			return util::sockaddr_to_string(&sa);
	}
	std::string hex;
	char byte[3];
	for (unsigned char c : name) {
		snprintf(byte, sizeof(byte), "%02x", c);
		hex += byte;
	}
	return hex;
}

namespace {

const struct fi_av_attr *defaulted(struct fi_av_attr *attr)
{
	if (!attr)
		throw util::Error(-FI_EINVAL);
	// Read as a number: an application may pass any value (util refuses unknown ones).
	if (util::raw_enum(attr->type) == FI_AV_UNSPEC)
		attr->type = FI_AV_MAP;
	return attr;
}

} // namespace

RxmAv::RxmAv(RxmDomain &domain, struct fi_av_attr *attr, void *context)
	: util::AddressVector(domain, defaulted(attr), context, domain.core_info()->addr_format,
			      domain.core_info()->src_addrlen)
{
}

bool RxmAv::address_of(fi_addr_t fi_addr, PeerName *name)
{
	char bytes[PeerName::kCapacity];
	size_t len = sizeof(bytes);
	// lookup copies under the AV lock: a concurrent remove cannot hand us half an address.
	if (lookup(fi_addr, bytes, &len) != 0 || len > sizeof(bytes))
		return false;
	return name->assign({bytes, len});
}

} // namespace rxm
