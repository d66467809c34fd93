// Same-host rendezvous (rxm_cma.h) in the endpoint: proving a peer's pid from its offer, and
// pulling a matched rendezvous with process_vm_readv. Any failure sends the connection back
// to RMA reads through the core for good; the sender learns it from rndv_done's flags.
// A keyless offer (made once the peer pulled before, rxm_cma.h) has nothing to fall back on:
// its failure fails the message at both ends.
#include "prov/rxm/rxm_cma.h"
#include "prov/rxm/rxm_cma_owner.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/shm/shm_peer_ops.h"

#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>

#include <sys/socket.h>
#include <unistd.h>

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

bool RxmEndpoint::open_core_peer_ops()
{
	// Only our shm answers this name; any other core (tcp, verbs, a foreign one) refuses.
	if (fi_open_ops(&domain_->core()->fid, OFI_SHM_PEER_OPS_NAME, 0,
			reinterpret_cast<void **>(&core_peer_ops_), nullptr) != 0)
		core_peer_ops_ = nullptr;
	return core_peer_ops_ != nullptr;
}

// Kernel facts that the process named pid is the one at the far end of conn's core connection.
int RxmEndpoint::prove_core_peer(RxmConn *conn, uint32_t pid)
{
	if (!core_peer_ops_)
		return cma_check_connection_owner(conn->core_ep, pid);
	// shm;ofi_rxm: the pid SO_PEERCRED gives for the connection's AF_UNIX socket (shm
	// refused the connection unless it came from our user), and that process must not have
	// gained privileges since (a set-uid program it started with the socket inherited).
	if (!conn->core_ep)
		return -FI_ENOTCONN;
	pid_t kernel_pid = 0;
	int ret = core_peer_ops_->peer_pid(conn->core_ep, &kernel_pid);
	if (ret)
		return ret;
	if (kernel_pid <= 0 || static_cast<uint32_t>(kernel_pid) != pid)
		return -FI_EPERM;
	return cma_process_not_elevated(kernel_pid, static_cast<uint32_t>(geteuid()));
}

bool RxmEndpoint::check_cma_offer(RxmConn *conn, std::span<const uint8_t> bytes,
				  CmaOffer *decoded)
{
	if (decode_cma_offer(bytes, decoded))
		return false;
	const CmaOffer &offer = *decoded;
	if (conn->cma_peer_pid != 0)
		return true; // proved (or refused) on the connection's first offer
	int ret = cma_ ? prove_core_peer(conn, offer.pid) : -FI_ENOSYS;
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

// A keyless offer (wire_flag::cma_only) has no RMA read to fall back on: the receive fails,
// and so does the send (its done comes without wire_flag::cma).
static bool keyless(const RecvOp *op)
{
	return op->wire_flags & wire_flag::cma_only;
}

void RxmEndpoint::fail_keyless_pull(RecvOp *op, int err)
{
	if (!op->error)
		op->error = err;
	if (op->conn->state != ConnState::closed)
		send_control(op->conn, WireOp::rndv_done, op->msg_id);
	complete_recv(op);
}

void RxmEndpoint::note_rndv_done(RxmConn *conn, TxOp *op, uint16_t done_flags)
{
	bool pulled = done_flags & wire_flag::cma;
	// A keyless offer the peer did not pull: nothing else can read it.
	if ((op->hdr.flags & wire_flag::cma_only) && !pulled && !op->error)
		op->error = -FI_EIO;
	// Whether the peer pulled our offer decides the protocol of the next messages.
	if (pulled && conn->cma_peer_pulls <= 0) {
		conn->cma_peer_pulls = 1;
		if (cma_)
			RXM_INFO(FI_LOG_EP_DATA, "peer pulls our rendezvous offers: no registration "
						 "for its rendezvous from now on\n");
	} else if (!pulled && (op->hdr.flags & wire_flag::cma)) {
		conn->cma_peer_pulls = -1;
	}
}

bool RxmEndpoint::pull_by_cma(RecvOp *op, const uint64_t *cma_addr)
{
	RxmConn *conn = op->conn;
	if (!cma_addr || !(op->wire_flags & wire_flag::cma) || conn->cma_peer_pid <= 0 || op->error ||
	    conn->state != ConnState::connected) {
		if (!keyless(op))
			return false;
		fail_keyless_pull(op, conn->state == ConnState::connected ? -FI_EIO
									  : -FI_ECONNRESET);
		return true;
	}
	// The posted receive bounds what lands in it, whatever the peer announced.
	uint64_t to_read = std::min<uint64_t>(op->total_len, op->capacity);
	int ret = cma_pull(conn->cma_peer_pid, op->iov, op->iov_count, op->rndv, cma_addr,
			   op->rndv_count, to_read);
	if (ret) {
		RXM_WARN(FI_LOG_EP_DATA, "process_vm_readv from peer process %d failed (%s): its "
					 "rendezvous data comes through the core from now on\n",
			 conn->cma_peer_pid, strerror(-ret));
		conn->cma_peer_pid = -1;
		if (!keyless(op))
			return false;
		fail_keyless_pull(op, -FI_EIO);
		return true;
	}
	send_control(conn, WireOp::rndv_done, op->msg_id, wire_flag::cma);
	complete_recv(op);
	return true;
}

} // namespace rxm
