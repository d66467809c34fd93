// fi_dupinfo / fi_freeinfo: deep copies of fi_info and its attributes. All memory comes from
// malloc so that infos built by providers (through fi_allocinfo) and by the core mix freely.
#include "src/info_alloc.h"

#include <rdma/fabric.h>

#include <cstdlib>
#include <cstring>

namespace ofi::core {

void *dup_bytes(const void *src, size_t len)
{
	if (!src || !len)
		return nullptr;
	void *copy = std::malloc(len);
	if (copy)
		std::memcpy(copy, src, len);
	return copy;
}

namespace {

// Duplicates *src into a fresh calloc'ed struct, or allocates a zeroed one when src is NULL
// and allocate_if_null is set. Returns false only on allocation failure.
template <typename Attr>
bool dup_attr(const Attr *src, Attr **dst, bool allocate_if_null)
{
	*dst = nullptr;
	if (!src && !allocate_if_null)
		return true;
	*dst = static_cast<Attr *>(std::calloc(1, sizeof(Attr)));
	if (!*dst)
		return false;
	if (src)
		**dst = *src;
	return true;
}

// Sets *dst to a private copy of src; false only on allocation failure.
bool copy_string(const char *src, char **dst)
{
	*dst = src ? strdup(src) : nullptr;
	return *dst || !src;
}

bool copy_key(const uint8_t *src, size_t len, uint8_t **dst)
{
	*dst = static_cast<uint8_t *>(dup_bytes(src, len));
	return *dst || !src || !len;
}

// Clears the pointers an attribute copy shares with its source, so that a failure half-way
// through copying never frees memory the source still owns.
void clear_shared_pointers(fi_info *info)
{
	if (info->ep_attr)
		info->ep_attr->auth_key = nullptr;
	if (info->domain_attr) {
		info->domain_attr->name = nullptr;
		info->domain_attr->auth_key = nullptr;
	}
	if (info->fabric_attr) {
		info->fabric_attr->name = nullptr;
		info->fabric_attr->prov_name = nullptr;
	}
}

bool copy_owned_pointers(const fi_info *src, fi_info *info)
{
	bool ok = true;
	if (info->ep_attr)
		ok = ok && copy_key(src->ep_attr->auth_key, src->ep_attr->auth_key_size,
				    &info->ep_attr->auth_key);
	if (info->domain_attr)
		ok = ok && copy_string(src->domain_attr->name, &info->domain_attr->name) &&
		     copy_key(src->domain_attr->auth_key, src->domain_attr->auth_key_size,
			      &info->domain_attr->auth_key);
	if (info->fabric_attr)
		ok = ok && copy_string(src->fabric_attr->name, &info->fabric_attr->name) &&
		     copy_string(src->fabric_attr->prov_name, &info->fabric_attr->prov_name);
	if (src->src_addr && src->src_addrlen) {
		info->src_addr = dup_bytes(src->src_addr, src->src_addrlen);
		ok = ok && info->src_addr;
	} else {
		info->src_addrlen = 0;
	}
	if (src->dest_addr && src->dest_addrlen) {
		info->dest_addr = dup_bytes(src->dest_addr, src->dest_addrlen);
		ok = ok && info->dest_addr;
	} else {
		info->dest_addrlen = 0;
	}
	return ok;
}

void free_attrs(fi_info *info)
{
	if (info->ep_attr)
		std::free(info->ep_attr->auth_key);
	if (info->domain_attr) {
		std::free(info->domain_attr->name);
		std::free(info->domain_attr->auth_key);
	}
	if (info->fabric_attr) {
		std::free(info->fabric_attr->name);
		std::free(info->fabric_attr->prov_name);
	}
	std::free(info->tx_attr);
	std::free(info->rx_attr);
	std::free(info->ep_attr);
	std::free(info->domain_attr);
	std::free(info->fabric_attr);
}

// Copy of src (or an empty info when src is NULL); pointers in the result are all owned.
fi_info *dup_one(const fi_info *src)
{
	fi_info *info = static_cast<fi_info *>(std::calloc(1, sizeof(fi_info)));
	if (!info)
		return nullptr;
	if (src) {
		*info = *src;
		// Clear every pointer first so a failed copy below frees only what it owns.
		info->next = nullptr;
		info->src_addr = info->dest_addr = nullptr;
		info->tx_attr = nullptr;
		info->rx_attr = nullptr;
		info->ep_attr = nullptr;
		info->domain_attr = nullptr;
		info->fabric_attr = nullptr;
		// A NIC object belongs to its provider and is not duplicated.
		info->nic = nullptr;
	}
	const bool fresh = src == nullptr;
	bool ok = dup_attr(fresh ? nullptr : src->tx_attr, &info->tx_attr, fresh) &&
		  dup_attr(fresh ? nullptr : src->rx_attr, &info->rx_attr, fresh) &&
		  dup_attr(fresh ? nullptr : src->ep_attr, &info->ep_attr, fresh) &&
		  dup_attr(fresh ? nullptr : src->domain_attr, &info->domain_attr, fresh) &&
		  dup_attr(fresh ? nullptr : src->fabric_attr, &info->fabric_attr, fresh);
	if (src) {
		// Even after a failed allocation: the copies made so far share src's pointers.
		clear_shared_pointers(info);
		ok = ok && copy_owned_pointers(src, info);
	}
	if (!ok) {
		free_one_info(info);
		return nullptr;
	}
	return info;
}

} // namespace

void free_one_info(fi_info *info)
{
	if (!info)
		return;
	std::free(info->src_addr);
	std::free(info->dest_addr);
	free_attrs(info);
	if (info->nic && info->nic->fid.ops && info->nic->fid.ops->close)
		info->nic->fid.ops->close(&info->nic->fid);
	std::free(info);
}

} // namespace ofi::core

extern "C" {

struct fi_info *fi_dupinfo(const struct fi_info *info)
{
	return ofi::core::dup_one(info);
}

void fi_freeinfo(struct fi_info *info)
{
	while (info) {
		fi_info *next = info->next;
		ofi::core::free_one_info(info);
		info = next;
	}
}

} // extern "C"

// Default versions; older ABIs have their own entry points in compat.cpp.
__asm__(".symver fi_dupinfo, fi_dupinfo@@@FABRIC_1.3");
__asm__(".symver fi_freeinfo, fi_freeinfo@@@FABRIC_1.3");
