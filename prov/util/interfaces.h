// Network interface enumeration (getifaddrs) for providers' fi_getinfo: one entry per
// interface address, with the subnet in the form providers use as domain/fabric names
// ("127.0.0.0/8", "fe80::/64").
#ifndef OFI_PROV_UTIL_INTERFACES_H
#define OFI_PROV_UTIL_INTERFACES_H

#include <sys/socket.h>

#include <string>
#include <vector>

namespace util {

struct NetInterface {
	std::string name;                 // "lo", "eth0"
	struct sockaddr_storage addr{};   // sockaddr_in / sockaddr_in6, port 0
	struct sockaddr_storage netmask{};
	std::string subnet;               // "127.0.0.0/8"
	int prefix_length = 0;
	bool up = false;
	bool running = false;
	bool loopback = false;
};

// IPv4 and/or IPv6 (family AF_INET, AF_INET6 or AF_UNSPEC) addresses of all interfaces;
// empty on error. Only interfaces that are up are listed unless include_down.
std::vector<NetInterface> list_interfaces(int family = AF_UNSPEC, bool include_down = false);

// Subnet string of addr/netmask.
std::string subnet_string(const struct sockaddr *addr, const struct sockaddr *netmask,
			  int *prefix_length = nullptr);

// The interface that owns 'addr' (matching address), or nullptr.
const NetInterface *find_interface(const std::vector<NetInterface> &list, const void *addr);

} // namespace util

#endif
