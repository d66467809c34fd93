#include "prov/util/sockaddr_util.h"

#include <rdma/fi_errno.h>

#include <arpa/inet.h>
#include <netdb.h>

#include <cstring>

namespace util {

size_t sockaddr_length(const void *addr) noexcept
{
	if (!addr)
		return 0;
	switch (static_cast<const struct sockaddr *>(addr)->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

int family_for_format(uint32_t addr_format) noexcept
{
	switch (addr_format) {
	case FI_SOCKADDR:
		return AF_UNSPEC;
	case FI_SOCKADDR_IN:
		return AF_INET;
	case FI_SOCKADDR_IN6:
		return AF_INET6;
	default:
		return -1;
	}
}

bool is_sockaddr_format(uint32_t addr_format) noexcept
{
	return family_for_format(addr_format) != -1;
}

uint32_t format_of(const void *addr) noexcept
{
	if (!addr)
		return FI_FORMAT_UNSPEC;
	switch (static_cast<const struct sockaddr *>(addr)->sa_family) {
	case AF_INET:
		return FI_SOCKADDR_IN;
	case AF_INET6:
		return FI_SOCKADDR_IN6;
	default:
		return FI_FORMAT_UNSPEC;
	}
}

bool sockaddr_valid(const void *addr, size_t len, uint32_t addr_format) noexcept
{
	size_t need = sockaddr_length(addr);
	if (!need || len < need)
		return false;
	int family = family_for_format(addr_format);
	if (family == -1)
		return false;
	return family == AF_UNSPEC || family == static_cast<const struct sockaddr *>(addr)->sa_family;
}

uint16_t sockaddr_port(const void *addr) noexcept
{
	switch (sockaddr_length(addr)) {
	case sizeof(struct sockaddr_in):
		return ntohs(static_cast<const struct sockaddr_in *>(addr)->sin_port);
	case sizeof(struct sockaddr_in6):
		return ntohs(static_cast<const struct sockaddr_in6 *>(addr)->sin6_port);
	default:
		return 0;
	}
}

void sockaddr_set_port(void *addr, uint16_t port) noexcept
{
	switch (sockaddr_length(addr)) {
	case sizeof(struct sockaddr_in):
		static_cast<struct sockaddr_in *>(addr)->sin_port = htons(port);
		break;
	case sizeof(struct sockaddr_in6):
		static_cast<struct sockaddr_in6 *>(addr)->sin6_port = htons(port);
		break;
	default:
		break;
	}
}

bool sockaddr_is_any(const void *addr) noexcept
{
	switch (sockaddr_length(addr)) {
	case sizeof(struct sockaddr_in):
		return static_cast<const struct sockaddr_in *>(addr)->sin_addr.s_addr ==
		       htonl(INADDR_ANY);
	case sizeof(struct sockaddr_in6):
		return IN6_IS_ADDR_UNSPECIFIED(
			&static_cast<const struct sockaddr_in6 *>(addr)->sin6_addr);
	default:
		return false;
	}
}

bool sockaddr_is_loopback(const void *addr) noexcept
{
	switch (sockaddr_length(addr)) {
	case sizeof(struct sockaddr_in):
		return (ntohl(static_cast<const struct sockaddr_in *>(addr)->sin_addr.s_addr) >>
			24) == 127;
	case sizeof(struct sockaddr_in6):
		return IN6_IS_ADDR_LOOPBACK(
			&static_cast<const struct sockaddr_in6 *>(addr)->sin6_addr);
	default:
		return false;
	}
}

bool sockaddr_equal(const void *a, const void *b) noexcept
{
	size_t len = sockaddr_length(a);
	if (!len || len != sockaddr_length(b))
		return false;
	if (len == sizeof(struct sockaddr_in)) {
		auto *x = static_cast<const struct sockaddr_in *>(a);
		auto *y = static_cast<const struct sockaddr_in *>(b);
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	auto *x = static_cast<const struct sockaddr_in6 *>(a);
	auto *y = static_cast<const struct sockaddr_in6 *>(b);
	return x->sin6_port == y->sin6_port &&
	       std::memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr)) == 0 &&
	       x->sin6_scope_id == y->sin6_scope_id;
}

size_t sockaddr_normalize(const void *addr, struct sockaddr_storage *out) noexcept
{
	size_t len = sockaddr_length(addr);
	std::memset(out, 0, sizeof(*out));
	if (len == sizeof(struct sockaddr_in)) {
		auto *in = static_cast<const struct sockaddr_in *>(addr);
		auto *copy = reinterpret_cast<struct sockaddr_in *>(out);
		copy->sin_family = AF_INET;
		copy->sin_port = in->sin_port;
		copy->sin_addr = in->sin_addr;
	} else if (len == sizeof(struct sockaddr_in6)) {
		auto *in6 = static_cast<const struct sockaddr_in6 *>(addr);
		auto *copy = reinterpret_cast<struct sockaddr_in6 *>(out);
		copy->sin6_family = AF_INET6;
		copy->sin6_port = in6->sin6_port;
		copy->sin6_addr = in6->sin6_addr;
		copy->sin6_scope_id = in6->sin6_scope_id;
	}
	return len;
}

std::string sockaddr_host(const void *addr)
{
	char text[INET6_ADDRSTRLEN] = "";
	switch (sockaddr_length(addr)) {
	case sizeof(struct sockaddr_in):
		inet_ntop(AF_INET, &static_cast<const struct sockaddr_in *>(addr)->sin_addr, text,
			  sizeof(text));
		break;
	case sizeof(struct sockaddr_in6):
		inet_ntop(AF_INET6, &static_cast<const struct sockaddr_in6 *>(addr)->sin6_addr,
			  text, sizeof(text));
		break;
	default:
		break;
	}
	return text;
}

std::string sockaddr_to_string(const void *addr)
{
	switch (sockaddr_length(addr)) {
	case sizeof(struct sockaddr_in):
		return "fi_sockaddr_in://" + sockaddr_host(addr) + ":" +
		       std::to_string(sockaddr_port(addr));
	case sizeof(struct sockaddr_in6):
		return "fi_sockaddr_in6://[" + sockaddr_host(addr) + "]:" +
		       std::to_string(sockaddr_port(addr));
	default:
		return "fi_addr_unknown";
	}
}

int resolve_sockaddr(const char *node, const char *service, bool passive,
		     uint32_t addr_format, struct sockaddr_storage *out, size_t *out_len)
{
	if (!out || !out_len)
		return -FI_EINVAL;
	int family = family_for_format(addr_format);
	if (family == -1)
		return -FI_EINVAL;
	if (!node && !passive)
		node = "localhost";
	struct addrinfo hints{};
	hints.ai_family = family;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	struct addrinfo *result = nullptr;
	int rc = getaddrinfo(node, service, &hints, &result);
	if (rc)
		return rc == EAI_MEMORY ? -FI_ENOMEM : -FI_ENODATA;
	int status = -FI_ENODATA;
	for (struct addrinfo *ai = result; ai; ai = ai->ai_next) {
		size_t len = sockaddr_length(ai->ai_addr);
		if (!len || len != ai->ai_addrlen)
			continue;
		std::memset(out, 0, sizeof(*out));
		std::memcpy(out, ai->ai_addr, len);
		*out_len = len;
		status = 0;
		break;
	}
	freeaddrinfo(result);
	return status;
}

const char *copy_string_out(const std::string &text, char *buf, size_t *len) noexcept
{
	if (!len)
		return buf;
	size_t capacity = *len;
	if (buf && capacity) {
		size_t n = text.size() < capacity - 1 ? text.size() : capacity - 1;
		std::memcpy(buf, text.data(), n);
		buf[n] = '\0';
	}
	*len = text.size() + 1;
	return buf;
}

} // namespace util
