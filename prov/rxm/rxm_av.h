// RxmAv: rxm's address vector, util's (an fi_addr_t is an index into a table of core
// addresses: the names of peers' passive endpoints, stored canonical). rxm adds what its
// connections need: the address of an entry as a PeerName, the reverse lookup (address ->
// fi_addr) serving FI_SOURCE and directed receives on connections that peers opened to us,
// and a generation that changes on every removal so cached reverse lookups are refreshed.
#ifndef OFI_PROV_RXM_AV_H
#define OFI_PROV_RXM_AV_H

#include "prov/util/address_vector.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace rxm {

class RxmDomain;

// An address as a lookup key: socket addresses with padding and flow labels zeroed, so the
// same peer always yields the same key however the application filled those bytes.
std::string canonical_address(const void *addr, size_t len);
// A printable form of such a key for logs: "ip:port" for IPv4/IPv6, hex bytes otherwise.
std::string describe_address(std::string_view name);

// A canonical address held inline. Every connection keeps its peer's, and the endpoint's map
// of peers is keyed by them: as std::string (socket addresses are longer than its inline
// buffer) each would be a heap block, and every send would copy one out of the AV.
class PeerName {
public:
	static constexpr size_t kCapacity = 32; // sockaddr_in6 and IB addresses fit
	// False (and left empty) when `name` is longer than kCapacity.
	bool assign(std::string_view name)
	{
		if (name.size() > kCapacity) {
			len_ = 0;
			return false;
		}
		len_ = static_cast<uint8_t>(name.size());
		name.copy(bytes_, name.size());
		return true;
	}
	std::string_view view() const { return {bytes_, len_}; }
	const char *data() const { return bytes_; }
	size_t size() const { return len_; }
	bool operator==(const PeerName &other) const { return view() == other.view(); }

private:
	// Aligned like a sockaddr_in6: the bytes are handed to the core as its address.
	alignas(4) char bytes_[kCapacity] = {};
	uint8_t len_ = 0;
};

struct PeerNameHash {
	size_t operator()(const PeerName &name) const noexcept
	{
		return std::hash<std::string_view>{}(name.view());
	}
};

class RxmAv : public util::AddressVector {
public:
	// Addresses are the core's (its addr_format); FI_AV_UNSPEC means FI_AV_MAP, written
	// back to attr->type as before.
	RxmAv(RxmDomain &domain, struct fi_av_attr *attr, void *context);

	// The core address of an entry; false when fi_addr is not a live entry (or one too
	// long for a PeerName).
	bool address_of(fi_addr_t fi_addr, PeerName *name);
	// The entry holding this canonical core address, or FI_ADDR_NOTAVAIL.
	fi_addr_t find(std::string_view name) { return AddressVector::find(name.data(), name.size()); }
	// Changes whenever entries are removed, so cached reverse lookups can be refreshed.
	uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
	// Changes whenever an entry appears, so a source cached as unknown can be looked up
	// again only then (not on every message of a peer the application never inserted).
	uint64_t insertions() const { return insertions_.load(std::memory_order_acquire); }

private:
	// Under the AV lock: one atomic increment, nothing torn down here (connections notice
	// the new generation on their next reverse lookup).
	void on_remove(fi_addr_t) override { generation_.fetch_add(1, std::memory_order_release); }
	void on_insert(fi_addr_t) override { insertions_.fetch_add(1, std::memory_order_release); }

	std::atomic<uint64_t> generation_{0};
	std::atomic<uint64_t> insertions_{0};
};

} // namespace rxm

#endif
