// Usable network interfaces (up, with an IPv4 or IPv6 address): each becomes one tcp domain,
// and its subnet names the fabric.
#ifndef PROV_TCP_TCP_INTERFACES_H
#define PROV_TCP_TCP_INTERFACES_H

#include <netinet/in.h>
#include <sys/socket.h>

#include <string>
#include <vector>

namespace tcp {

struct Interface {
	std::string name;          // e.g. "lo", the domain name
	std::string subnet;        // e.g. "127.0.0.0/8", the fabric name
	sockaddr_storage addr{};   // the interface address, port 0
	socklen_t addr_len = 0;
	bool loopback = false;
};

// Interfaces in the order infos are reported: non-loopback first, IPv4 before IPv6.
// `only` (FI_TCP_IFACE) restricts the list to one interface name when non-empty.
std::vector<Interface> list_interfaces(const std::string &only);

// Address helpers shared by getinfo and the endpoints.
socklen_t sockaddr_length(const sockaddr *sa);  // 0 when not AF_INET/AF_INET6
bool same_ip(const sockaddr *a, const sockaddr *b);       // ignores the port
bool is_wildcard_ip(const sockaddr *sa);
bool is_loopback_ip(const sockaddr *sa);
uint16_t sockaddr_port(const sockaddr *sa);
void set_sockaddr_port(sockaddr *sa, uint16_t port);
std::string sockaddr_to_string(const sockaddr *sa);

} // namespace tcp

#endif
