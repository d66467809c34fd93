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
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace rxm {

class RxmDomain;

// An address as a lookup key: socket addresses with padding and flow labels zeroed, so the
// same peer always yields the same key however the application filled those bytes.
std::string canonical_address(const void *addr, size_t len);
// A printable form of such a key for logs: "ip:port" for IPv4/IPv6, hex bytes otherwise.
std::string describe_address(const std::string &name);

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

	// The core address of an entry; false when fi_addr is not a live entry.
	bool address_of(fi_addr_t fi_addr, std::string *name) const;
	// The entry holding this core address, or FI_ADDR_NOTAVAIL.
	fi_addr_t find(const std::string &name) const;
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
	std::unordered_map<std::string, fi_addr_t> by_name_;
	std::atomic<uint64_t> generation_{0};
};

} // namespace rxm

#endif
