// Per-peer shares of an endpoint's send resources (operation slots, bounce buffers).
// A peer whose connection is being set up, or whose core does not drain, keeps what it took
// until its sends complete or fail; without a share, one such peer takes the whole pool and
// every send to the others gets -FI_EAGAIN (issue 15, finding 5).
//
// Rule: a peer may take one more only while it holds fewer than are left for applications
// (free minus the control reserve). Alone, a peer so gets half the pool (120 of 240 bounce
// buffers by default: more than any window a single-peer benchmark keeps in flight); each
// further stalled peer gets at most half of what the earlier ones left, so k stalled peers
// leave 1/2^k of the pool to the others instead of nothing, and healthy peers, whose
// resources come back as fast as the core takes them, always find room.
#ifndef OFI_PROV_RXM_SHARE_H
#define OFI_PROV_RXM_SHARE_H

#include <cstddef>

namespace rxm {

inline bool within_peer_share(size_t held_by_peer, size_t free_count, size_t reserve)
{
	return free_count > reserve && held_by_peer < free_count - reserve;
}

} // namespace rxm

#endif
