// util::AddressVector: fi_av_* for every provider, FI_AV_MAP and FI_AV_TABLE.
//
// Addresses are opaque byte strings of at most kMaxAddrLen bytes. Their format decides how
// they are measured, validated, resolved and printed:
//   - FI_SOCKADDR, FI_SOCKADDR_IN, FI_SOCKADDR_IN6: struct sockaddr_in / sockaddr_in6
//     (each address is as long as its family says; arrays given to fi_av_insert are packed
//     that way), insertsvc/insertsym resolve with getaddrinfo, straddr gives
//     "fi_sockaddr_in://1.2.3.4:5" / "fi_sockaddr_in6://[::1]:5".
//   - anything else (e.g. a utility provider's own format): fixed 'addrlen' bytes per
//     address, straddr prints hex; insertsvc/insertsym return -FI_ENOSYS.
// fi_addr_t values are table indices in both modes (allowed for FI_AV_MAP); removed slots
// are reused lowest-first, so peers that come and go keep the AV's size flat. Entries live
// in stable storage, so address() pointers stay valid until the entry is removed.
// As in libfabric 1.17, inserting an address already present returns its fi_addr and counts
// one more use: the entry goes away when it has been removed as many times as inserted.
// With attr->flags FI_EVENT, inserts report FI_AV_COMPLETE on the bound EQ (the work itself
// is done synchronously) and the call returns 0; FI_SYNC_ERR fills the int array passed as
// context (0 or the negative -FI_E* code per address). Failed entries get FI_ADDR_NOTAVAIL.
// Providers needing to react to inserts/removals (e.g. rxm tearing down connections)
// derive and override on_insert/on_remove; no other change is needed.
#ifndef OFI_PROV_UTIL_ADDRESS_VECTOR_H
#define OFI_PROV_UTIL_ADDRESS_VECTOR_H

#include "prov/util/domain.h"
#include "prov/util/fid_object.h"
#include "prov/util/lock.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_domain.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace util {

class EventQueue;

class AddressVector : public FidStorage<fid_av>, public FidObject {
public:
	static constexpr size_t kMaxAddrLen = 128;

	// 'addr_format' is the domain's (FI_FORMAT_UNSPEC: the domain info's); 'addrlen' is
	// only used for non-sockaddr formats.
	AddressVector(Domain &domain, const struct fi_av_attr *attr, void *context,
		      uint32_t addr_format = FI_FORMAT_UNSPEC, size_t addrlen = 0);
	~AddressVector() override;

	struct fid_av *av_fid() noexcept { return &embedded_fid.pub; }
	Domain &domain() noexcept { return domain_; }
	enum fi_av_type type() const noexcept { return type_; }
	uint32_t addr_format() const noexcept { return addr_format_; }

	// ---- provider side ----
	// The stored address for fi_addr (nullptr if not in use); *len gets its length.
	const void *address(fi_addr_t fi_addr, size_t *len = nullptr);
	// Reverse lookup (e.g. source of an incoming connection); FI_ADDR_NOTAVAIL if absent.
	// Sockaddrs match whatever their padding and IPv6 flow label hold. Allocates nothing.
	fi_addr_t find(const void *addr, size_t len);
	// Length of the address at 'addr' in this AV's format (0 if invalid).
	size_t measure(const void *addr) const noexcept;
	size_t count_in_use();
	// The fi_addr of every entry in use, lowest first (FI_UNIVERSE AV sets).
	std::vector<fi_addr_t> live_addresses();

	// Hooks, called with the AV lock held, when an entry appears and when it goes away
	// (not for further inserts and removes of an address already present).
	virtual void on_insert(fi_addr_t) {}
	virtual void on_remove(fi_addr_t) {}

	// ---- fi_ops_av ----
	int insert(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
		   void *context);
	int insertsvc(const char *node, const char *service, fi_addr_t *fi_addr,
		      uint64_t flags, void *context);
	int insertsym(const char *node, size_t nodecnt, const char *service, size_t svccnt,
		      fi_addr_t *fi_addr, uint64_t flags, void *context);
	int remove(fi_addr_t *fi_addr, size_t count, uint64_t flags);
	int lookup(fi_addr_t fi_addr, void *addr, size_t *addrlen);
	const char *straddr(const void *addr, char *buf, size_t *len);
	// fi_av_set: an AvSet (prov/util/av_set.h) over this AV.
	int av_set(struct fi_av_set_attr *attr, struct fid_av_set **set, void *context);

	// ---- fi_ops ----
	int bind(struct fid *bfid, uint64_t flags);  // EQ for FI_EVENT
	int close() override;

private:
	struct Entry {
		bool in_use = false;
		uint8_t len = 0;
		uint32_t uses = 0;  // inserts not yet matched by a remove
		std::array<uint8_t, kMaxAddrLen> bytes{};
	};

	// Inserts one address (or counts one more use of it); returns its fi_addr or a
	// negative -FI_E* code.
	int64_t insert_one(const void *addr, size_t len);
	// Drops one use of a live entry; the last one frees its slot.
	void remove_one(fi_addr_t fi_addr);
	int check_insert_flags(uint64_t flags) const;
	int finish_insert(size_t count, int inserted, const std::vector<int> &status,
			  fi_addr_t *fi_addr, uint64_t flags, void *context);
	bool sockaddr_format() const noexcept;

	Domain &domain_;
	enum fi_av_type type_;
	uint32_t addr_format_;
	size_t addrlen_;
	uint64_t flags_;
	size_t capacity_hint_;
	Lock lock_;
	std::deque<Entry> entries_;
	// Removed slots, lowest on top (FI_AV_TABLE hands out the lowest free index).
	std::priority_queue<size_t, std::vector<size_t>, std::greater<size_t>> free_slots_;
	// Keys view the bytes of the entry they index (stable: entries_ is a deque that only
	// grows), so neither inserting nor finding builds a string.
	std::unordered_map<std::string_view, fi_addr_t> index_;
	EventQueue *eq_ = nullptr;
};

} // namespace util

#endif
