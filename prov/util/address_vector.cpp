#include "prov/util/address_vector.h"

#include "prov/util/av_set.h"
#include "prov/util/error.h"
#include "prov/util/event_queue.h"
#include "prov/util/sockaddr_util.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>

namespace util {

namespace {

enum fi_av_type checked_type(const struct fi_av_attr *attr, const Domain &domain)
{
	unsigned raw = raw_enum(attr->type);
	if (raw != FI_AV_UNSPEC && raw != FI_AV_MAP && raw != FI_AV_TABLE)
		throw Error(-FI_EINVAL);
	enum fi_av_type type = static_cast<enum fi_av_type>(raw);
	if (type == FI_AV_UNSPEC) {
		const fi_domain_attr *domain_attr = domain.info()->domain_attr;
		type = domain_attr->av_type != FI_AV_UNSPEC ? domain_attr->av_type : FI_AV_TABLE;
	}
	if (type != FI_AV_MAP && type != FI_AV_TABLE)
		throw Error(-FI_EINVAL);
	return type;
}

uint32_t chosen_format(uint32_t addr_format, const Domain &domain)
{
	return addr_format != FI_FORMAT_UNSPEC ? addr_format : domain.addr_format();
}

} // namespace

AddressVector::AddressVector(Domain &domain, const struct fi_av_attr *attr, void *context,
			     uint32_t addr_format, size_t addrlen)
    : FidObject(embedded_fid, FI_CLASS_AV, context), domain_(domain),
      type_(checked_type(attr, domain)), addr_format_(chosen_format(addr_format, domain)),
      addrlen_(addrlen), flags_(attr->flags), capacity_hint_(attr->count),
      lock_(domain.lock_kind())
{
	if (attr->flags & ~(FI_EVENT | FI_READ | FI_SYMMETRIC))
		throw Error(-FI_EBADFLAGS);
	if (attr->name || attr->rx_ctx_bits)
		throw Error(-FI_ENOSYS);  // named (shared) AVs and scalable endpoints
	if (sockaddr_format())
		addrlen_ = sizeof(struct sockaddr_in6);
	else if (!addrlen_ || addrlen_ > kMaxAddrLen)
		throw Error(-FI_EINVAL);
	embedded_fid.pub.fid.ops = ops_ptr<AddressVector, make_fi_ops<AddressVector>>();
	embedded_fid.pub.ops = ops_ptr<AddressVector, make_av_ops<AddressVector>>();
	domain_.ref();
}

AddressVector::~AddressVector()
{
	if (eq_)
		eq_->unref();
	domain_.unref();
}

int AddressVector::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

bool AddressVector::sockaddr_format() const noexcept
{
	return is_sockaddr_format(addr_format_);
}

size_t AddressVector::measure(const void *addr) const noexcept
{
	if (!addr)
		return 0;
	if (!sockaddr_format())
		return addrlen_;
	size_t len = sockaddr_length(addr);
	return sockaddr_valid(addr, len, addr_format_) ? len : 0;
}

// ---- provider side ----

const void *AddressVector::address(fi_addr_t fi_addr, size_t *len)
{
	LockGuard guard(lock_);
	if (fi_addr >= entries_.size() || !entries_[fi_addr].in_use)
		return nullptr;
	const Entry &entry = entries_[fi_addr];
	if (len)
		*len = entry.len;
	return entry.bytes.data();
}

fi_addr_t AddressVector::find(const void *addr, size_t len)
{
	if (!addr || !len || len > kMaxAddrLen)
		return FI_ADDR_NOTAVAIL;
	struct sockaddr_storage normalized;
	if (sockaddr_format()) {
		if (len < sockaddr_length(addr) || !sockaddr_length(addr))
			return FI_ADDR_NOTAVAIL;
		len = sockaddr_normalize(addr, &normalized);
		addr = &normalized;
	}
	LockGuard guard(lock_);
	auto it = index_.find(std::string_view(static_cast<const char *>(addr), len));
	return it == index_.end() ? FI_ADDR_NOTAVAIL : it->second;
}

size_t AddressVector::count_in_use()
{
	LockGuard guard(lock_);
	return index_.size();
}

std::vector<fi_addr_t> AddressVector::live_addresses()
{
	LockGuard guard(lock_);
	std::vector<fi_addr_t> live;
	live.reserve(index_.size());
	for (size_t i = 0; i < entries_.size(); ++i)
		if (entries_[i].in_use)
			live.push_back(i);
	return live;
}

int AddressVector::av_set(struct fi_av_set_attr *attr, struct fid_av_set **set,
			  void *context)
{
	if (!set)
		return -FI_EINVAL;
	*set = (new AvSet(*this, attr, context))->av_set_fid();
	return 0;
}

int64_t AddressVector::insert_one(const void *addr, size_t len)
{
	if (!len || len > kMaxAddrLen)
		return -FI_EINVAL;
	// Store sockaddrs without padding bytes so reverse lookups match any copy.
	struct sockaddr_storage normalized;
	if (sockaddr_format()) {
		len = sockaddr_normalize(addr, &normalized);
		addr = &normalized;
	}
	auto known = index_.find(std::string_view(static_cast<const char *>(addr), len));
	if (known != index_.end()) {
		Entry &entry = entries_[known->second];
		if (entry.uses == UINT32_MAX)
			return -FI_ENOSPC;
		++entry.uses;
		return static_cast<int64_t>(known->second);
	}
	size_t slot;
	if (!free_slots_.empty()) {
		slot = free_slots_.top();
		free_slots_.pop();
	} else {
		entries_.emplace_back();
		slot = entries_.size() - 1;
	}
	Entry &entry = entries_[slot];
	entry.len = static_cast<uint8_t>(len);
	std::memcpy(entry.bytes.data(), addr, len);
	// The key views the entry's own bytes: no string is built per insert.
	try {
		index_.emplace(std::string_view(reinterpret_cast<const char *>(entry.bytes.data()), len),
			       slot);
	} catch (...) {
		free_slots_.push(slot);
		throw;
	}
	entry.in_use = true;
	entry.uses = 1;
	on_insert(slot);
	return static_cast<int64_t>(slot);
}

void AddressVector::remove_one(fi_addr_t fi_addr)
{
	Entry &entry = entries_[fi_addr];
	if (--entry.uses)
		return;
	on_remove(fi_addr);
	index_.erase(std::string_view(reinterpret_cast<const char *>(entry.bytes.data()), entry.len));
	entry.in_use = false;
	free_slots_.push(fi_addr);
}

int AddressVector::check_insert_flags(uint64_t flags) const
{
	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if ((flags_ & FI_EVENT) && !eq_)
		return -FI_ENOEQ;
	if ((flags & FI_SYNC_ERR) && (flags_ & FI_EVENT))
		return -FI_EBADFLAGS;  // FI_SYNC_ERR applies to synchronous inserts only
	return 0;
}

int AddressVector::finish_insert(size_t count, int inserted, const std::vector<int> &status,
				 fi_addr_t *, uint64_t flags, void *context)
{
	if (flags & FI_SYNC_ERR) {
		if (context) {
			auto *errors = static_cast<int *>(context);
			for (size_t i = 0; i < count; ++i)
				errors[i] = status[i];
		}
	}
	if (flags_ & FI_EVENT) {
		// Done synchronously, reported as the app asked: one FI_AV_COMPLETE with the
		// number inserted, plus an error event per failed address.
		for (size_t i = 0; i < count; ++i) {
			if (status[i])
				eq_->write_error(&embedded_fid.pub.fid, context, i, -status[i], 0);
		}
		struct fi_eq_entry entry{};
		entry.fid = &embedded_fid.pub.fid;
		entry.context = context;
		entry.data = static_cast<uint64_t>(inserted);
		eq_->write_event(FI_AV_COMPLETE, &entry, sizeof(entry));
		return 0;
	}
	return inserted;
}

int AddressVector::insert(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
			  void *context)
{
	int rc = check_insert_flags(flags);
	if (rc)
		return rc;
	if (count && !addr)
		return -FI_EINVAL;
	if (count > static_cast<size_t>(INT32_MAX))
		return -FI_EINVAL;
	std::vector<int> status(count, 0);
	int inserted = 0;
	{
		LockGuard guard(lock_);
		auto *cursor = static_cast<const uint8_t *>(addr);
		for (size_t i = 0; i < count; ++i) {
			size_t len = measure(cursor);
			int64_t result = len ? insert_one(cursor, len) : -FI_EINVAL;
			if (result < 0) {
				status[i] = static_cast<int>(result);
				if (fi_addr)
					fi_addr[i] = FI_ADDR_NOTAVAIL;
				// The stride is unknown after a malformed sockaddr; later ones
				// cannot be located reliably, so they fail too.
				if (!len) {
					for (size_t j = i + 1; j < count; ++j) {
						status[j] = -FI_EINVAL;
						if (fi_addr)
							fi_addr[j] = FI_ADDR_NOTAVAIL;
					}
					break;
				}
			} else {
				++inserted;
				if (fi_addr)
					fi_addr[i] = static_cast<fi_addr_t>(result);
			}
			cursor += len;
		}
	}
	return finish_insert(count, inserted, status, fi_addr, flags, context);
}

int AddressVector::insertsvc(const char *node, const char *service, fi_addr_t *fi_addr,
			     uint64_t flags, void *context)
{
	if (!node || !service)
		return -FI_EINVAL;
	return insertsym(node, 1, service, 1, fi_addr, flags, context);
}

int AddressVector::insertsym(const char *node, size_t nodecnt, const char *service,
			     size_t svccnt, fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	if (!sockaddr_format())
		return -FI_ENOSYS;
	if (!node || !service || !nodecnt || !svccnt || nodecnt > 65536 || svccnt > 65536)
		return -FI_EINVAL;
	int rc = check_insert_flags(flags);
	if (rc)
		return rc;
	// Symmetric naming: node names and service numbers count up from the given ones
	// ("host1", "host2", ... / 7000, 7001, ...). Only numeric-suffix nodes can be counted.
	std::string node_prefix(node);
	unsigned long node_base = 0;
	size_t digits = 0;
	while (digits < node_prefix.size() &&
	       std::isdigit(static_cast<unsigned char>(node_prefix[node_prefix.size() - 1 - digits])))
		++digits;
	if (nodecnt > 1 && !digits)
		return -FI_EINVAL;
	if (digits) {
		node_base = std::stoul(node_prefix.substr(node_prefix.size() - digits));
		node_prefix.resize(node_prefix.size() - digits);
	}
	char *end = nullptr;
	unsigned long service_base = std::strtoul(service, &end, 10);
	if (svccnt > 1 && (!end || *end))
		return -FI_EINVAL;

	size_t count = nodecnt * svccnt;
	std::vector<uint8_t> packed;
	std::vector<int> status(count, 0);
	std::vector<size_t> positions;  // index in the request of each resolved address
	for (size_t n = 0; n < nodecnt; ++n) {
		std::string host = node;
		if (nodecnt > 1 || digits) {
			std::string number = std::to_string(node_base + n);
			if (number.size() < digits)
				number.insert(0, digits - number.size(), '0');
			host = node_prefix + number;
		}
		for (size_t s = 0; s < svccnt; ++s) {
			std::string svc = svccnt > 1 ? std::to_string(service_base + s) : service;
			struct sockaddr_storage resolved;
			size_t len = 0;
			int result = resolve_sockaddr(host.c_str(), svc.c_str(), false, addr_format_,
						      &resolved, &len);
			size_t index = n * svccnt + s;
			if (result) {
				status[index] = result;
				continue;
			}
			auto *bytes = reinterpret_cast<const uint8_t *>(&resolved);
			packed.insert(packed.end(), bytes, bytes + len);
			positions.push_back(index);
		}
	}

	std::vector<fi_addr_t> resolved_addrs(positions.size(), FI_ADDR_NOTAVAIL);
	std::vector<int> resolved_status(positions.size(), 0);
	int inserted = 0;
	{
		LockGuard guard(lock_);
		const uint8_t *cursor = packed.data();
		for (size_t i = 0; i < positions.size(); ++i) {
			size_t len = measure(cursor);
			int64_t result = insert_one(cursor, len);
			if (result < 0)
				resolved_status[i] = static_cast<int>(result);
			else {
				resolved_addrs[i] = static_cast<fi_addr_t>(result);
				++inserted;
			}
			cursor += len;
		}
	}
	if (fi_addr)
		std::fill(fi_addr, fi_addr + count, FI_ADDR_NOTAVAIL);
	for (size_t i = 0; i < positions.size(); ++i) {
		if (fi_addr)
			fi_addr[positions[i]] = resolved_addrs[i];
		status[positions[i]] = resolved_status[i];
	}
	return finish_insert(count, inserted, status, fi_addr, flags, context);
}

int AddressVector::remove(fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;
	LockGuard guard(lock_);
	// Validate everything first so a bad entry leaves the AV unchanged.
	for (size_t i = 0; i < count; ++i) {
		if (fi_addr[i] >= entries_.size() || !entries_[fi_addr[i]].in_use)
			return -FI_EINVAL;
	}
	for (size_t i = 0; i < count; ++i) {
		// Listed more often than inserted: the entry is already gone, nothing to drop.
		if (entries_[fi_addr[i]].in_use)
			remove_one(fi_addr[i]);
	}
	return 0;
}

int AddressVector::lookup(fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	LockGuard guard(lock_);
	if (fi_addr >= entries_.size() || !entries_[fi_addr].in_use)
		return -FI_ENOENT;
	const Entry &entry = entries_[fi_addr];
	size_t capacity = *addrlen;
	if (addr && capacity)
		std::memcpy(addr, entry.bytes.data(), std::min<size_t>(capacity, entry.len));
	*addrlen = entry.len;
	return 0;
}

const char *AddressVector::straddr(const void *addr, char *buf, size_t *len)
{
	if (!len)
		return nullptr;
	std::string text;
	if (sockaddr_format()) {
		text = sockaddr_to_string(addr);
	} else if (addr) {
		static const char kHex[] = "0123456789abcdef";
		text = "fi_addr_hex://";
		auto *bytes = static_cast<const uint8_t *>(addr);
		for (size_t i = 0; i < addrlen_; ++i) {
			text += kHex[bytes[i] >> 4];
			text += kHex[bytes[i] & 0xf];
		}
	}
	return copy_string_out(text, buf, len);
}

int AddressVector::bind(struct fid *bfid, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	auto *eq = fid_cast<EventQueue>(bfid, FI_CLASS_EQ);
	if (!eq || &eq->fabric() != &domain_.fabric())
		return -FI_EINVAL;
	if (eq_)
		return -FI_EALREADY;
	eq->ref();
	eq_ = eq;
	return 0;
}

} // namespace util
