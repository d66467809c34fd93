// Per-peer budget for unexpected messages (FI_OFI_RXM_UNEXPECTED_BUDGET): messages nobody has
// posted a receive for are buffered, and without a bound a peer sending tagged messages no one
// receives grows the endpoint's memory as fast as it can send (issue 15, finding 7). A peer
// over its budget is held: rxm stops taking its messages, so they wait in the core (TCP
// backpressure, or no credits returned) - nothing is dropped, other peers are not slowed. The
// hold ends once the application's receives took the peer back to half its budget.
//
// How a peer is held depends on the core:
//  * shared receive context with the core's rx_hold ops (our tcp): the core stops reading
//    that connection's stream at its next message;
//  * receive buffers per connection (no shared context, or credit flow control as over
//    verbs): that connection's buffers are not reposted, so it has none left and, with
//    credits, gets none back;
//  * a shared receive context without rx_hold ops: cannot hold one peer (warned once).
//
// A held stream also carries the answers to our rendezvous reads, so a peer is not held while
// such a read is in the core (the application is waiting for exactly that data); it is held
// again when the read is done if still over budget.
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"

namespace rxm {

void RxmEndpoint::charge_unexpected(Unexpected *u, size_t bytes)
{
	u->charged += bytes;
	RxmConn *conn = u->conn;
	conn->unexpected_bytes += bytes;
	if (!conn->rx_held && conn->unexpected_bytes > params().unexpected_budget)
		hold_peer(conn);
}

void RxmEndpoint::release_unexpected(Unexpected *u)
{
	RxmConn *conn = u->conn;
	conn->unexpected_bytes -= u->charged;
	delete u;
	maybe_release_peer(conn);
}

void RxmEndpoint::hold_peer(RxmConn *conn)
{
	if (conn->rx_held || conn->reads_in_core || conn->state == ConnState::closed)
		return;
	if (srx_) {
		const ofi_rx_hold_ops *ops = domain_->rx_hold();
		if (!ops) {
			static bool warned;
			if (!warned)
				RXM_WARN(FI_LOG_EP_DATA, "a peer is over its unexpected-message budget, "
							 "but the core cannot hold one connection of a "
							 "shared receive context: not throttled\n");
			warned = true;
			return;
		}
		if (!conn->core_ep || ops->hold(conn->core_ep) != 0)
			return;
	}
	RXM_INFO(FI_LOG_EP_DATA, "peer %s holds %zu bytes of unexpected messages: not reading it "
				 "until receives take them\n",
		 describe_address(conn->peer_name.view()).c_str(), conn->unexpected_bytes);
	conn->rx_held = true; // without srx_: repost() keeps its buffers in held_rx
}

void RxmEndpoint::maybe_release_peer(RxmConn *conn)
{
	if (!conn->rx_held)
		return;
	// Our rendezvous read's answer travels on the held stream: let it through.
	bool read_waits = conn->reads_in_core > 0;
	if (!read_waits && conn->unexpected_bytes > params().unexpected_budget / 2)
		return;
	conn->rx_held = false;
	if (conn->state == ConnState::closed || !conn->core_ep) {
		conn->held_rx.clear();
		return;
	}
	RXM_INFO(FI_LOG_EP_DATA, "peer %s: reading it again\n",
		 describe_address(conn->peer_name.view()).c_str());
	if (srx_)
		domain_->rx_hold()->release(conn->core_ep);
	// Without srx_ these are all its buffers; with it, those of its shm connection.
	std::vector<RxBuffer *> held;
	held.swap(conn->held_rx);
	for (RxBuffer *buf : held)
		if (repost(buf))
			on_buffer_reposted(conn);
}

} // namespace rxm
