// RxmAv: rxm's address vector. An fi_addr_t is an index into a table of core addresses (the
// names of peers' passive endpoints); FI_AV_MAP and FI_AV_TABLE both use indexes, which map
// addresses may be. The reverse lookup (address -> fi_addr) serves FI_SOURCE and directed
// receives on connections that peers opened to us.
#ifndef OFI_PROV_RXM_AV_H
#define OFI_PROV_RXM_AV_H

#include "prov/util/fid_object.h"

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

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

// Lets the AV's std::string-keyed index be searched with a std::string_view.
struct NameHash {
	using is_transparent = void;
	size_t operator()(std::string_view name) const noexcept
	{
		return std::hash<std::string_view>{}(name);
	}
};

class RxmAv : public util::FidStorage<fid_av>, public util::FidObject {
public:
	static int open(RxmDomain *domain, struct fi_av_attr *attr, struct fid_av **av,
			void *context);
	int close() override;
	struct fid_av *pub() { return &embedded_fid.pub; }

	int insert(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
		   void *context);
	int remove(fi_addr_t *fi_addr, size_t count, uint64_t flags);
	int lookup(fi_addr_t fi_addr, void *addr, size_t *addrlen);
	const char *straddr(const void *addr, char *buf, size_t *len);

	// The core address of an entry; false when fi_addr is not a live entry (or, for a
	// PeerName, one too long to hold).
	bool address_of(fi_addr_t fi_addr, std::string *name) const;
	bool address_of(fi_addr_t fi_addr, PeerName *name) const;
	// The entry holding this core address, or FI_ADDR_NOTAVAIL.
	fi_addr_t find(std::string_view name) const;
	// Changes whenever entries are removed, so cached reverse lookups can be refreshed.
	uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
	// Byte length of one address of this AV's format.
	size_t address_length(const void *addr) const;

private:
	RxmAv(RxmDomain *domain, uint32_t addr_format, size_t default_len, void *context);

	RxmDomain *domain_;
	uint32_t addr_format_;
	size_t default_len_;
	mutable std::mutex lock_;
	std::vector<std::string> entries_; // empty string: removed entry
	std::unordered_map<std::string, fi_addr_t, NameHash, std::equal_to<>> by_name_;
	std::atomic<uint64_t> generation_{0};
};

} // namespace rxm

#endif
