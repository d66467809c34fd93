#include "prov/util/info_util.h"

#include "prov/util/error.h"
#include "prov/util/sockaddr_util.h"

#include <rdma/fi_errno.h>

#include <cstdlib>
#include <cstring>

namespace util {

uint32_t api_version_of(const struct fi_info *info) noexcept
{
	if (info && info->fabric_attr && info->fabric_attr->api_version)
		return info->fabric_attr->api_version;
	return FI_VERSION(1, 17);
}

struct fi_info *dup_info_list(const struct fi_info *list)
{
	struct fi_info *head = nullptr;
	struct fi_info **tail = &head;
	for (const struct fi_info *item = list; item; item = item->next) {
		struct fi_info *copy = fi_dupinfo(item);
		if (!copy) {
			fi_freeinfo(head);
			return nullptr;
		}
		copy->next = nullptr;
		*tail = copy;
		tail = &copy->next;
	}
	return head;
}

void append_info(struct fi_info **list, struct fi_info *item) noexcept
{
	if (!list)
		return;
	while (*list)
		list = &(*list)->next;
	*list = item;
}

int set_string(char **field, const std::string &value)
{
	char *copy = strdup(value.c_str());
	if (!copy)
		return -FI_ENOMEM;
	std::free(*field);
	*field = copy;
	return 0;
}

namespace {

int set_address(void **field, size_t *field_len, const void *addr, size_t len)
{
	void *copy = nullptr;
	if (len) {
		if (!addr)
			return -FI_EINVAL;
		copy = std::malloc(len);
		if (!copy)
			return -FI_ENOMEM;
		std::memcpy(copy, addr, len);
	}
	std::free(*field);
	*field = copy;
	*field_len = len;
	return 0;
}

} // namespace

int set_src_addr(struct fi_info *info, const void *addr, size_t len)
{
	return set_address(&info->src_addr, &info->src_addrlen, addr, len);
}

int set_dest_addr(struct fi_info *info, const void *addr, size_t len)
{
	return set_address(&info->dest_addr, &info->dest_addrlen, addr, len);
}

int fill_addresses(struct fi_info *info, const char *node, const char *service,
		   uint64_t flags, const struct fi_info *hints, uint32_t addr_format)
{
	if (!info || !is_sockaddr_format(addr_format))
		return -FI_EINVAL;
	struct sockaddr_storage addr;
	size_t len = 0;
	int rc;
	if (flags & FI_SOURCE) {
		// node/service name the local address to bind.
		if (node || service) {
			rc = resolve_sockaddr(node, service, true, addr_format, &addr, &len);
			if (rc)
				return rc;
			rc = set_src_addr(info, &addr, len);
			if (rc)
				return rc;
		} else if (hints && hints->src_addr) {
			if (!sockaddr_valid(hints->src_addr, hints->src_addrlen, addr_format))
				return -FI_EINVAL;
			rc = set_src_addr(info, hints->src_addr, hints->src_addrlen);
			if (rc)
				return rc;
		}
		if (hints && hints->dest_addr) {
			if (!sockaddr_valid(hints->dest_addr, hints->dest_addrlen, addr_format))
				return -FI_EINVAL;
			return set_dest_addr(info, hints->dest_addr, hints->dest_addrlen);
		}
		return 0;
	}
	if (node || service) {
		// node/service name the peer.
		rc = resolve_sockaddr(node, service, false, addr_format, &addr, &len);
		if (rc)
			return rc;
		rc = set_dest_addr(info, &addr, len);
		if (rc)
			return rc;
	} else if (hints && hints->dest_addr) {
		if (!sockaddr_valid(hints->dest_addr, hints->dest_addrlen, addr_format))
			return -FI_EINVAL;
		rc = set_dest_addr(info, hints->dest_addr, hints->dest_addrlen);
		if (rc)
			return rc;
	}
	if (hints && hints->src_addr) {
		if (!sockaddr_valid(hints->src_addr, hints->src_addrlen, addr_format))
			return -FI_EINVAL;
		return set_src_addr(info, hints->src_addr, hints->src_addrlen);
	}
	return 0;
}

int offset_mr_mode_for(const struct fi_info *hints) noexcept
{
	if (!hints || !hints->domain_attr)
		return FI_MR_PROV_KEY;
	int mode = hints->domain_attr->mr_mode;
	if (mode & FI_MR_BASIC)
		return FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	if (mode == FI_MR_SCALABLE || mode == FI_MR_UNSPEC)
		return 0;
	return (mode & FI_MR_PROV_KEY) ? FI_MR_PROV_KEY : 0;
}

enum fi_progress progress_asked(const struct fi_info *hints, bool data) noexcept
{
	if (hints && hints->domain_attr) {
		unsigned p = raw_enum(data ? hints->domain_attr->data_progress
					   : hints->domain_attr->control_progress);
		if (p == FI_PROGRESS_AUTO || p == FI_PROGRESS_MANUAL)
			return static_cast<enum fi_progress>(p);
	}
	return FI_PROGRESS_MANUAL;
}

} // namespace util
