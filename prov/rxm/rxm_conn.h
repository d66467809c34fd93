// RxmConn: one core MSG connection of an rxm endpoint, with the state rxm keeps per peer
// connection: its receive buffers, the ordered queue of sends waiting for the core, segmented
// message reassembly and rendezvous sends waiting for the receiver.
#ifndef OFI_PROV_RXM_CONN_H
#define OFI_PROV_RXM_CONN_H

#include "prov/rxm/rxm_cm_data.h"
#include "prov/rxm/rxm_list.h"
#include "prov/rxm/rxm_ops.h"
#include "prov/rxm/rxm_sar.h"

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

#include <string>
#include <vector>

namespace rxm {

class RxmEndpoint;

enum class ConnState {
	connecting,       // we called fi_connect
	accepting,        // we called fi_accept
	connected,
	waiting_for_peer, // our request lost a simultaneous connect; the peer's will arrive
	closed,
};

class RxmConn {
public:
	explicit RxmConn(RxmEndpoint *ep) : ep(ep) {}
	RxmConn(const RxmConn &) = delete;
	RxmConn &operator=(const RxmConn &) = delete;

	RxmEndpoint *ep;
	struct fid_ep *core_ep = nullptr;
	ConnState state = ConnState::connecting;
	std::string peer_name;          // canonical core address of the peer's passive endpoint
	EndpointIdentity peer_identity; // from its CM data
	bool receive_only = false;      // the accepted half of a connection to ourselves
	fi_addr_t source = FI_ADDR_NOTAVAIL; // AV entry of the peer (FI_SOURCE)
	size_t peer_eager_size = 0;     // largest eager payload the peer's buffers take
	uint64_t source_generation = ~0ULL;

	std::vector<uint8_t> rx_slab;
	std::vector<RxBuffer> rx;
	struct fid_mr *rx_mr = nullptr;
	bool rx_posted = false;

	IntrusiveList<TxOp> backlog;  // in order; the front is the next to hand to the core
	IntrusiveList<TxOp> awaiting; // rendezvous sends waiting for rndv_done

	std::vector<RecvOp *> write_targets; // receives waiting for the sender's rendezvous writes

	SarReassembly sar;
	RecvOp *sar_target = nullptr;
	Unexpected *sar_unexpected = nullptr;
	uint64_t sar_placed = 0;
};

} // namespace rxm

#endif
