// The decisions of rxm's connection map, kept free of core objects so they can be tested
// alone: what to do with an incoming connection request and with a rejection of our own.
//
// Simultaneous connect: when two endpoints connect to each other at the same time, each sees
// the other's request while its own is pending. Both apply the same rule, so exactly one
// connection survives: the request of the endpoint with the smaller identity wins (its peer
// accepts it and drops its own attempt; it rejects the peer's with reason "simultaneous").
#ifndef OFI_PROV_RXM_CONN_RULES_H
#define OFI_PROV_RXM_CONN_RULES_H

#include "prov/rxm/rxm_cm_data.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstring>
#include <span>

namespace rxm {

// Whether the name a requester claims in its CM data agrees with the address the transport
// shows for its connection (FI_CONNREQ's info->dest_addr). Only the IP can agree: the
// requester connects from an ephemeral port, not from its listener's.
enum class ClaimCheck {
	agrees,
	disagrees,      // the transport shows an IP address and the claim names another
	not_comparable, // the transport shows no IP address (nothing to hold the claim against)
};

namespace detail {
// The IP of a sockaddr_in/sockaddr_in6 held in bytes (maybe unaligned): 4 bytes for IPv4
// and IPv4-mapped IPv6, 16 for other IPv6. 0 when the bytes are no IP socket address.
inline size_t ip_of(std::span<const uint8_t> sa, uint8_t (&ip)[16])
{
	static const uint8_t v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
	sa_family_t family;
	if (sa.size() < sizeof(family))
		return 0;
	memcpy(&family, sa.data(), sizeof(family));
	if (family == AF_INET && sa.size() >= sizeof(sockaddr_in)) {
		memcpy(ip, sa.data() + offsetof(sockaddr_in, sin_addr), 4);
		return 4;
	}
	if (family == AF_INET6 && sa.size() >= sizeof(sockaddr_in6)) {
		const uint8_t *a = sa.data() + offsetof(sockaddr_in6, sin6_addr);
		if (memcmp(a, v4_mapped_prefix, sizeof(v4_mapped_prefix)) == 0) {
			memcpy(ip, a + 12, 4);
			return 4;
		}
		memcpy(ip, a, 16);
		return 16;
	}
	return 0;
}
} // namespace detail

inline ClaimCheck check_claimed_source(std::span<const uint8_t> claimed,
				       std::span<const uint8_t> shown)
{
	uint8_t shown_ip[16], claimed_ip[16];
	size_t shown_len = detail::ip_of(shown, shown_ip);
	if (shown_len == 0)
		return ClaimCheck::not_comparable;
	size_t claimed_len = detail::ip_of(claimed, claimed_ip);
	return claimed_len == shown_len && memcmp(claimed_ip, shown_ip, shown_len) == 0
		       ? ClaimCheck::agrees
		       : ClaimCheck::disagrees;
}

// What this endpoint knows about a peer address when a request from it arrives.
enum class PeerConnState {
	none,       // no connection and no attempt
	connecting, // we sent a request that is not yet answered
	connected,  // a connection is established
};

enum class ConnreqAction {
	accept,            // first connection with this peer
	accept_self,       // our own request looping back (connect-to-self)
	accept_replacing,  // the peer restarted and its old connection is known dead: accept
	reject_live_peer,  // another instance claims a peer whose connection still looks alive:
			   // refuse (retryable) until that connection is known dead
	accept_dropping_ours, // simultaneous connect, peer wins: accept, abandon our attempt
	reject_simultaneous,  // simultaneous connect, we win: our request will be accepted
	reject_duplicate,     // the same peer instance is already connected
};

// known_peer_id is the endpoint id of the peer on the existing connection (state connected);
// existing_dead says that connection is known to be gone (its core reported a shutdown or an
// error). A request from another instance never replaces a live connection: anyone able to
// connect from the peer's IP could otherwise cut the real peer off by claiming its name.
inline ConnreqAction decide_connreq(const EndpointIdentity &self, const EndpointIdentity &peer,
				    PeerConnState state, uint64_t known_peer_id,
				    bool existing_dead = false)
{
	if (peer == self)
		return ConnreqAction::accept_self;
	switch (state) {
	case PeerConnState::none:
		return ConnreqAction::accept;
	case PeerConnState::connecting:
		return compare_identity(self, peer) < 0 ? ConnreqAction::reject_simultaneous
						       : ConnreqAction::accept_dropping_ours;
	case PeerConnState::connected:
		if (peer.endpoint_id == known_peer_id)
			return ConnreqAction::reject_duplicate;
		return existing_dead ? ConnreqAction::accept_replacing
				     : ConnreqAction::reject_live_peer;
	}
	return ConnreqAction::reject_duplicate;
}

enum class RejectAction {
	wait_for_peer, // the peer's own request is (or will be) accepted by us: keep sends queued
	fail_sends,    // a real refusal: pending sends complete in error
};

inline RejectAction decide_rejected(RejectReason reason)
{
	return reason == RejectReason::simultaneous || reason == RejectReason::duplicate
		       ? RejectAction::wait_for_peer
		       : RejectAction::fail_sends;
}

} // namespace rxm

#endif
