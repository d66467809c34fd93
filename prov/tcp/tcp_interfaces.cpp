#include "prov/tcp/tcp_interfaces.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace tcp {
namespace {

int prefix_length(const sockaddr *mask)
{
	const uint8_t *bytes = nullptr;
	size_t n = 0;
	if (mask->sa_family == AF_INET) {
		bytes = reinterpret_cast<const uint8_t *>(
			&reinterpret_cast<const sockaddr_in *>(mask)->sin_addr);
		n = 4;
	} else {
		bytes = reinterpret_cast<const sockaddr_in6 *>(mask)->sin6_addr.s6_addr;
		n = 16;
	}
	int bits = 0;
	for (size_t i = 0; i < n; i++)
		bits += __builtin_popcount(bytes[i]);
	return bits;
}

std::string subnet_name(const sockaddr *addr, const sockaddr *mask)
{
	char text[INET6_ADDRSTRLEN] = {};
	if (addr->sa_family == AF_INET) {
		in_addr net = reinterpret_cast<const sockaddr_in *>(addr)->sin_addr;
		net.s_addr &= reinterpret_cast<const sockaddr_in *>(mask)->sin_addr.s_addr;
		inet_ntop(AF_INET, &net, text, sizeof(text));
	} else {
		in6_addr net = reinterpret_cast<const sockaddr_in6 *>(addr)->sin6_addr;
		const in6_addr &m = reinterpret_cast<const sockaddr_in6 *>(mask)->sin6_addr;
		for (int i = 0; i < 16; i++)
			net.s6_addr[i] &= m.s6_addr[i];
		inet_ntop(AF_INET6, &net, text, sizeof(text));
	}
	return std::string(text) + "/" + std::to_string(prefix_length(mask));
}

} // namespace

socklen_t sockaddr_length(const sockaddr *sa)
{
	if (!sa)
		return 0;
	// Read as bytes: an application's address need not be aligned for a sockaddr.
	sa_family_t family;
	memcpy(&family, reinterpret_cast<const char *>(sa) + offsetof(sockaddr, sa_family),
	       sizeof(family));
	if (family == AF_INET)
		return sizeof(sockaddr_in);
	if (family == AF_INET6)
		return sizeof(sockaddr_in6);
	return 0;
}

bool same_ip(const sockaddr *a, const sockaddr *b)
{
	if (a->sa_family != b->sa_family)
		return false;
	if (a->sa_family == AF_INET)
		return reinterpret_cast<const sockaddr_in *>(a)->sin_addr.s_addr ==
		       reinterpret_cast<const sockaddr_in *>(b)->sin_addr.s_addr;
	if (a->sa_family == AF_INET6)
		return memcmp(&reinterpret_cast<const sockaddr_in6 *>(a)->sin6_addr,
			      &reinterpret_cast<const sockaddr_in6 *>(b)->sin6_addr,
			      sizeof(in6_addr)) == 0;
	return false;
}

bool is_wildcard_ip(const sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr == INADDR_ANY;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr);
	return false;
}

bool is_loopback_ip(const sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(reinterpret_cast<const sockaddr_in *>(sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr);
	return false;
}

uint16_t sockaddr_port(const sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(reinterpret_cast<const sockaddr_in *>(sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_port);
	return 0;
}

void set_sockaddr_port(sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		reinterpret_cast<sockaddr_in *>(sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		reinterpret_cast<sockaddr_in6 *>(sa)->sin6_port = htons(port);
}

std::string sockaddr_to_string(const sockaddr *sa)
{
	char text[INET6_ADDRSTRLEN] = {};
	if (sa->sa_family == AF_INET) {
		inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in *>(sa)->sin_addr, text,
			  sizeof(text));
		return std::string(text) + ":" + std::to_string(sockaddr_port(sa));
	}
	if (sa->sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6 *>(sa)->sin6_addr, text,
			  sizeof(text));
		return "[" + std::string(text) + "]:" + std::to_string(sockaddr_port(sa));
	}
	return "(unknown address family)";
}

std::vector<Interface> list_interfaces(const std::string &only)
{
	std::vector<Interface> result;
	ifaddrs *list = nullptr;
	if (getifaddrs(&list) != 0)
		return result;
	for (ifaddrs *ifa = list; ifa; ifa = ifa->ifa_next) {
		if (!ifa->ifa_addr || !ifa->ifa_netmask || !(ifa->ifa_flags & IFF_UP))
			continue;
		int family = ifa->ifa_addr->sa_family;
		if (family != AF_INET && family != AF_INET6)
			continue;
		if (!only.empty() && only != ifa->ifa_name)
			continue;
		Interface entry;
		entry.name = ifa->ifa_name;
		entry.subnet = subnet_name(ifa->ifa_addr, ifa->ifa_netmask);
		entry.addr_len = sockaddr_length(ifa->ifa_addr);
		memcpy(&entry.addr, ifa->ifa_addr, entry.addr_len);
		set_sockaddr_port(reinterpret_cast<sockaddr *>(&entry.addr), 0);
		entry.loopback = (ifa->ifa_flags & IFF_LOOPBACK) != 0;
		result.push_back(std::move(entry));
	}
	freeifaddrs(list);
	std::stable_sort(result.begin(), result.end(), [](const Interface &a, const Interface &b) {
		if (a.loopback != b.loopback)
			return !a.loopback;
		return a.addr.ss_family == AF_INET && b.addr.ss_family == AF_INET6;
	});
	return result;
}

} // namespace tcp
