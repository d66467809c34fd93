// Same-host rendezvous (rxm_cma.h) in the endpoint: proving a peer's pid from its offer, and
// pulling a matched rendezvous with process_vm_readv. Any failure sends the connection back
// to RMA reads through the core for good; the sender learns it from rndv_done's flags.
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_errno.h>

#include <algorithm>
#include <cstring>

namespace rxm {

bool RxmEndpoint::check_cma_offer(RxmConn *conn, std::span<const uint8_t> bytes,
				  CmaOffer *decoded)
{
	if (decode_cma_offer(bytes, decoded))
		return false;
	const CmaOffer &offer = *decoded;
	if (conn->cma_peer_pid != 0)
		return true; // proved (or refused) on the connection's first offer
	int ret = cma_ ? cma_check_peer(offer) : -FI_ENOSYS;
	if (ret) {
		conn->cma_peer_pid = -1;
		RXM_INFO(FI_LOG_EP_DATA, "peer claiming pid %u not proved (%s): its rendezvous data "
					 "comes through the core\n", offer.pid, strerror(-ret));
		return true;
	}
	conn->cma_peer_pid = static_cast<int32_t>(offer.pid);
	RXM_INFO(FI_LOG_EP_DATA, "peer is process %u of this host: rendezvous data pulled by "
				 "process_vm_readv\n", offer.pid);
	return true;
}

bool RxmEndpoint::pull_by_cma(RecvOp *op, const uint64_t *cma_addr)
{
	RxmConn *conn = op->conn;
	if (!cma_addr || !(op->wire_flags & wire_flag::cma) || conn->cma_peer_pid <= 0 || op->error ||
	    conn->state != ConnState::connected)
		return false;
	// The posted receive bounds what lands in it, whatever the peer announced.
	uint64_t to_read = std::min<uint64_t>(op->total_len, op->capacity);
	int ret = cma_pull(conn->cma_peer_pid, op->iov, op->iov_count, op->rndv, cma_addr,
			   op->rndv_count, to_read);
	if (ret) {
		RXM_WARN(FI_LOG_EP_DATA, "process_vm_readv from peer process %d failed (%s): its "
					 "rendezvous data comes through the core from now on\n",
			 conn->cma_peer_pid, strerror(-ret));
		conn->cma_peer_pid = -1;
		return false;
	}
	send_control(conn, WireOp::rndv_done, op->msg_id, wire_flag::cma);
	complete_recv(op);
	return true;
}

} // namespace rxm
