// Same-host rendezvous (rxm_cma.h) in the endpoint: proving a peer's pid from its offer, and
// pulling a matched rendezvous with process_vm_readv. Any failure sends the connection back
// to RMA reads through the core for good; the sender learns it from rndv_done's flags.
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_cma_owner.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace rxm {

// The pid must own the socket at the far end of this very connection (rxm_cma_owner.h) before
// its token is even read: the token proves an address space, not who is talking to us.
int cma_check_connection_owner(struct fid_ep *core_ep, uint32_t pid)
{
	if (!core_ep)
		return -FI_ENOTCONN;
	sockaddr_storage local{}, peer{};
	size_t local_len = sizeof(local), peer_len = sizeof(peer);
	int ret = fi_getname(&core_ep->fid, &local, &local_len);
	if (!ret)
		ret = fi_getpeer(core_ep, &peer, &peer_len);
	if (ret)
		return ret;
	if (local_len > sizeof(local) || peer_len > sizeof(peer))
		return -FI_EINVAL;
	return cma_check_socket_owner(static_cast<pid_t>(pid), reinterpret_cast<sockaddr *>(&local),
				      reinterpret_cast<sockaddr *>(&peer));
}

bool RxmEndpoint::check_cma_offer(RxmConn *conn, std::span<const uint8_t> bytes,
				  CmaOffer *decoded)
{
	if (decode_cma_offer(bytes, decoded))
		return false;
	const CmaOffer &offer = *decoded;
	if (conn->cma_peer_pid != 0)
		return true; // proved (or refused) on the connection's first offer
	int ret = cma_ ? cma_check_connection_owner(conn->core_ep, offer.pid) : -FI_ENOSYS;
	if (!ret)
		ret = cma_check_peer(offer);
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
