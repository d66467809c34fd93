#include "prov/util/interfaces.h"

#include "prov/util/sockaddr_util.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <cstring>

namespace util {

namespace {

int prefix_of(const uint8_t *mask, size_t bytes)
{
	int bits = 0;
	for (size_t i = 0; i < bytes; ++i)
		bits += __builtin_popcount(mask[i]);
	return bits;
}

} // namespace

std::string subnet_string(const struct sockaddr *addr, const struct sockaddr *netmask,
			  int *prefix_length)
{
	if (!addr || !netmask || addr->sa_family != netmask->sa_family)
		return "";
	char text[INET6_ADDRSTRLEN] = "";
	int prefix = 0;
	if (addr->sa_family == AF_INET) {
		struct in_addr net = reinterpret_cast<const sockaddr_in *>(addr)->sin_addr;
		struct in_addr mask = reinterpret_cast<const sockaddr_in *>(netmask)->sin_addr;
		net.s_addr &= mask.s_addr;
		prefix = prefix_of(reinterpret_cast<const uint8_t *>(&mask.s_addr), 4);
		inet_ntop(AF_INET, &net, text, sizeof(text));
	} else if (addr->sa_family == AF_INET6) {
		struct in6_addr net = reinterpret_cast<const sockaddr_in6 *>(addr)->sin6_addr;
		const struct in6_addr &mask = reinterpret_cast<const sockaddr_in6 *>(netmask)->sin6_addr;
		for (int i = 0; i < 16; ++i)
			net.s6_addr[i] &= mask.s6_addr[i];
		prefix = prefix_of(mask.s6_addr, 16);
		inet_ntop(AF_INET6, &net, text, sizeof(text));
	} else {
		return "";
	}
	if (prefix_length)
		*prefix_length = prefix;
	return std::string(text) + "/" + std::to_string(prefix);
}

std::vector<NetInterface> list_interfaces(int family, bool include_down)
{
	std::vector<NetInterface> result;
	struct ifaddrs *list = nullptr;
	if (getifaddrs(&list))
		return result;
	for (struct ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || !ifa->ifa_netmask)
			continue;
		int fam = ifa->ifa_addr->sa_family;
		if (fam != AF_INET && fam != AF_INET6)
			continue;
		if (family != AF_UNSPEC && fam != family)
			continue;
		bool up = ifa->ifa_flags & IFF_UP;
		if (!up && !include_down)
			continue;
		NetInterface item;
		item.name = ifa->ifa_name ? ifa->ifa_name : "";
		size_t len = sockaddr_length(ifa->ifa_addr);
		std::memcpy(&item.addr, ifa->ifa_addr, len);
		sockaddr_set_port(&item.addr, 0);
		std::memcpy(&item.netmask, ifa->ifa_netmask, len);
		item.subnet = subnet_string(ifa->ifa_addr, ifa->ifa_netmask, &item.prefix_length);
		item.up = up;
		item.running = ifa->ifa_flags & IFF_RUNNING;
		item.loopback = ifa->ifa_flags & IFF_LOOPBACK;
		result.push_back(item);
	}
	freeifaddrs(list);
	return result;
}

const NetInterface *find_interface(const std::vector<NetInterface> &list, const void *addr)
{
	size_t len = sockaddr_length(addr);
	if (!len)
		return nullptr;
	for (const NetInterface &item : list) {
		if (item.addr.ss_family != static_cast<const sockaddr *>(addr)->sa_family)
			continue;
		if (item.addr.ss_family == AF_INET) {
			if (reinterpret_cast<const sockaddr_in *>(&item.addr)->sin_addr.s_addr ==
			    static_cast<const sockaddr_in *>(addr)->sin_addr.s_addr)
				return &item;
		} else if (std::memcmp(&reinterpret_cast<const sockaddr_in6 *>(&item.addr)->sin6_addr,
				       &static_cast<const sockaddr_in6 *>(addr)->sin6_addr,
				       sizeof(struct in6_addr)) == 0) {
			return &item;
		}
	}
	return nullptr;
}

} // namespace util
