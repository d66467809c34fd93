// RxmAv: table of core addresses with reverse lookup.
#include "prov/rxm/rxm_av.h"

#include "prov/rxm/rxm_domain.h"
#include "prov/util/error.h"
#include "prov/util/ops_tables.h"
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
	std::string name(static_cast<const char *>(addr), len);
	auto *sa = reinterpret_cast<sockaddr *>(name.data());
	if (len == sizeof(sockaddr_in) && sa->sa_family == AF_INET)
		memset(reinterpret_cast<sockaddr_in *>(sa)->sin_zero, 0, sizeof(sockaddr_in::sin_zero));
	else if (len == sizeof(sockaddr_in6) && sa->sa_family == AF_INET6)
		reinterpret_cast<sockaddr_in6 *>(sa)->sin6_flowinfo = 0;
	return name;
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

RxmAv::RxmAv(RxmDomain *domain, uint32_t addr_format, size_t default_len, void *context)
	: FidObject(embedded_fid, FI_CLASS_AV, context), domain_(domain), addr_format_(addr_format),
	  default_len_(default_len)
{
	embedded_fid.pub.fid.ops = util::ops_ptr<RxmAv, util::make_fi_ops<RxmAv>>();
	embedded_fid.pub.ops = util::ops_ptr<RxmAv, util::make_av_ops<RxmAv>>();
	domain_->ref();
}

int RxmAv::open(RxmDomain *domain, struct fi_av_attr *attr, struct fid_av **av, void *context)
{
	if (!attr || !av)
		return -FI_EINVAL;
	const unsigned type = util::raw_enum(attr->type);
	if (type != FI_AV_UNSPEC && type != FI_AV_MAP && type != FI_AV_TABLE)
		return -FI_EINVAL;
	if (attr->flags & ~(FI_SYMMETRIC))
		return -FI_EBADFLAGS; // no async (FI_EVENT) inserts, no shared AVs
	if (attr->name)
		return -FI_ENOSYS;
	const fi_info *core = domain->core_info();
	RxmAv *a = new (std::nothrow) RxmAv(domain, core->addr_format, core->src_addrlen, context);
	if (!a)
		return -FI_ENOMEM;
	if (attr->type == FI_AV_UNSPEC)
		attr->type = FI_AV_MAP;
	*av = a->pub();
	return 0;
}

int RxmAv::close()
{
	if (busy())
		return -FI_EBUSY;
	domain_->unref();
	return FidObject::close();
}

size_t RxmAv::address_length(const void *addr) const
{
	switch (addr_format_) {
	case FI_SOCKADDR_IN:
		return sizeof(sockaddr_in);
	case FI_SOCKADDR_IN6:
		return sizeof(sockaddr_in6);
	case FI_SOCKADDR: {
		sa_family_t family = static_cast<const sockaddr *>(addr)->sa_family;
		if (family == AF_INET)
			return sizeof(sockaddr_in);
		if (family == AF_INET6)
			return sizeof(sockaddr_in6);
		return 0;
	}
	default:
		return default_len_;
	}
}

int RxmAv::insert(const void *addr, size_t count, fi_addr_t *fi_addr, uint64_t flags,
		  void *context)
{
	(void)context;
	if (flags & ~(FI_MORE | FI_SYNC_ERR))
		return -FI_EBADFLAGS;
	if (count && !addr)
		return -FI_EINVAL;
	std::lock_guard guard(lock_);
	const uint8_t *p = static_cast<const uint8_t *>(addr);
	int inserted = 0;
	for (size_t i = 0; i < count; i++) {
		size_t len = address_length(p);
		fi_addr_t result = FI_ADDR_NOTAVAIL;
		if (len > 0) {
			std::string name = canonical_address(p, len);
			auto it = by_name_.find(name);
			if (it != by_name_.end()) {
				result = it->second;
			} else {
				result = entries_.size();
				entries_.push_back(name);
				by_name_.emplace(name, result);
			}
			inserted++;
			p += len;
		} else {
			// The size of an unknown address is unknown too: nothing after it can be read.
			if (fi_addr)
				for (size_t j = i; j < count; j++)
					fi_addr[j] = FI_ADDR_NOTAVAIL;
			break;
		}
		if (fi_addr)
			fi_addr[i] = result;
	}
	return inserted;
}

int RxmAv::remove(fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	if (flags)
		return -FI_EBADFLAGS;
	if (count && !fi_addr)
		return -FI_EINVAL;
	std::lock_guard guard(lock_);
	for (size_t i = 0; i < count; i++)
		if (fi_addr[i] >= entries_.size() || entries_[fi_addr[i]].empty())
			return -FI_EINVAL;
	for (size_t i = 0; i < count; i++) {
		by_name_.erase(entries_[fi_addr[i]]);
		entries_[fi_addr[i]].clear();
	}
	generation_.fetch_add(1, std::memory_order_release);
	return 0;
}

int RxmAv::lookup(fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	if (!addrlen)
		return -FI_EINVAL;
	std::string name;
	if (!address_of(fi_addr, &name))
		return -FI_EINVAL;
	size_t room = *addrlen;
	*addrlen = name.size();
	if (addr)
		memcpy(addr, name.data(), room < name.size() ? room : name.size());
	return room < name.size() ? -FI_ETOOSMALL : 0;
}

const char *RxmAv::straddr(const void *addr, char *buf, size_t *len)
{
	if (!addr || !buf || !len)
		return nullptr;
	std::string text = util::sockaddr_length(addr)
				   ? util::sockaddr_to_string(addr)
				   : "fi_addr_format_" + std::to_string(addr_format_) + "://";
	return util::copy_string_out(text, buf, len);
}

bool RxmAv::address_of(fi_addr_t fi_addr, std::string *name) const
{
	std::lock_guard guard(lock_);
	if (fi_addr >= entries_.size() || entries_[fi_addr].empty())
		return false;
	*name = entries_[fi_addr];
	return true;
}

bool RxmAv::address_of(fi_addr_t fi_addr, PeerName *name) const
{
	std::lock_guard guard(lock_);
	if (fi_addr >= entries_.size() || entries_[fi_addr].empty())
		return false;
	return name->assign(entries_[fi_addr]);
}

fi_addr_t RxmAv::find(std::string_view name) const
{
	std::lock_guard guard(lock_);
	auto it = by_name_.find(name);
	return it == by_name_.end() ? FI_ADDR_NOTAVAIL : it->second;
}

} // namespace rxm
