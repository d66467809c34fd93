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

namespace rxm {

// What this endpoint knows about a peer address when a request from it arrives.
enum class PeerConnState {
	none,       // no connection and no attempt
	connecting, // we sent a request that is not yet answered
	connected,  // a connection is established
};

enum class ConnreqAction {
	accept,            // first connection with this peer
	accept_self,       // our own request looping back (connect-to-self)
	accept_replacing,  // the peer restarted: accept, and close the stale connection
	accept_dropping_ours, // simultaneous connect, peer wins: accept, abandon our attempt
	reject_simultaneous,  // simultaneous connect, we win: our request will be accepted
	reject_duplicate,     // the same peer instance is already connected
};

// known_peer_id is the endpoint id of the peer on the existing connection (state connected).
inline ConnreqAction decide_connreq(const EndpointIdentity &self, const EndpointIdentity &peer,
				    PeerConnState state, uint64_t known_peer_id)
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
		return peer.endpoint_id != known_peer_id ? ConnreqAction::accept_replacing
							 : ConnreqAction::reject_duplicate;
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
