// Helpers that keep a listener serving while peers misbehave or fds run out: a monotonic
// clock, the "same source host" test the per-IP handshake bound uses, and a warning that
// is logged at most once per interval with a count of what it held back (a listener that
// cannot accept would otherwise write a line per attempt, thousands per second).
#ifndef PROV_TCP_TCP_ACCEPT_GUARD_H
#define PROV_TCP_TCP_ACCEPT_GUARD_H

#include "prov/tcp/tcp_socket.h"

#include <cstdint>
#include <cstring>
#include <ctime>

namespace tcp {

inline uint64_t monotonic_ms()
{
	timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return uint64_t(ts.tv_sec) * 1000 + uint64_t(ts.tv_nsec) / 1000000;
}

// Ports differ between a host's connections; only the address says who is connecting.
inline bool same_source_host(const IpAddress &a, const IpAddress &b)
{
	if (a.sa.sa_family != b.sa.sa_family)
		return false;
	if (a.sa.sa_family == AF_INET)
		return a.in4.sin_addr.s_addr == b.in4.sin_addr.s_addr;
	if (a.sa.sa_family == AF_INET6)
		return memcmp(&a.in6.sin6_addr, &b.in6.sin6_addr, sizeof(a.in6.sin6_addr)) == 0;
	return false;
}

class RateLimitedWarning {
public:
	explicit RateLimitedWarning(uint64_t interval_ms) : interval_ms_(interval_ms) {}

	// True when a line may be written now; take_suppressed() then gives the number of
	// occurrences held back since the previous line.
	bool due(uint64_t now_ms)
	{
		if (logged_ && now_ms - last_ms_ < interval_ms_) {
			++suppressed_;
			return false;
		}
		logged_ = true;
		last_ms_ = now_ms;
		return true;
	}
	uint64_t take_suppressed()
	{
		uint64_t n = suppressed_;
		suppressed_ = 0;
		return n;
	}

private:
	uint64_t interval_ms_;
	uint64_t last_ms_ = 0;
	uint64_t suppressed_ = 0;
	bool logged_ = false;
};

} // namespace tcp

#endif
