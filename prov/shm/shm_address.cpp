#include "prov/shm/shm_address.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>

namespace shm {
namespace {

constexpr size_t kPrefixLen = sizeof(kAddrPrefix) - 1;

bool name_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       c == '.' || c == '_' || c == ':' || c == '-';
}

bool set_name(const char *name, size_t name_len, ShmAddress *out)
{
	if (name_len == 0 || kPrefixLen + name_len >= kAddrLen)
		return false;
	for (size_t i = 0; i < name_len; i++)
		if (!name_char(name[i]))
			return false;
	ShmAddress a;
	memcpy(a.text, kAddrPrefix, kPrefixLen);
	memcpy(a.text + kPrefixLen, name, name_len);
	*out = a;
	return true;
}

} // namespace

bool parse_address(const void *addr, size_t len, ShmAddress *out)
{
	if (!addr || len <= kPrefixLen)
		return false;
	const char *text = static_cast<const char *>(addr);
	const void *nul = memchr(text, '\0', len);
	if (!nul)
		return false;
	size_t text_len = static_cast<const char *>(nul) - text;
	if (text_len < kPrefixLen || memcmp(text, kAddrPrefix, kPrefixLen) != 0)
		return false;
	return set_name(text + kPrefixLen, text_len - kPrefixLen, out);
}

bool address_for_service(const char *service, ShmAddress *out)
{
	return service && set_name(service, strlen(service), out);
}

ShmAddress unique_address()
{
	static std::atomic<unsigned> counter{0};
	char name[kAddrLen];
	int n = snprintf(name, sizeof(name), "%d:%u", static_cast<int>(getpid()),
			 counter.fetch_add(1) + 1);
	ShmAddress a;
	set_name(name, static_cast<size_t>(n), &a);
	return a;
}

socklen_t socket_name(const ShmAddress &addr, sockaddr_un *out)
{
	*out = sockaddr_un{};
	out->sun_family = AF_UNIX;
	// Abstract namespace (leading NUL): no file to leave behind, gone with the socket.
	int n = snprintf(out->sun_path + 1, sizeof(out->sun_path) - 1, "fi_shm.%u.%s",
			 static_cast<unsigned>(geteuid()), addr.text + kPrefixLen);
	return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + n);
}

} // namespace shm
