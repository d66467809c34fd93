// RMA and rendezvous of a connection moved to shm (README.md "Same-host peers over shm"): the
// registrations rxm makes for one transfer get their shm twins, bound to the shm endpoint of
// the connection they are offered on, when the offer travels over shm. The application's own
// registrations have theirs from the domain (rxm_shm_domain.cpp).
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"
#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_errno.h>

namespace rxm {

void close_own_mrs(struct fid_mr **core, struct fid_mr **shm, size_t *count)
{
	for (size_t i = 0; i < *count; i++) {
		if (shm[i])
			fi_close(&shm[i]->fid);
		shm[i] = nullptr;
		fi_close(&core[i]->fid);
	}
	*count = 0;
}

int RxmEndpoint::twin_internal(const RxmConn *conn, void *buf, size_t len, uint64_t access,
			       struct fid_mr *original, struct fid_mr **twin)
{
	if (!conn->shm_ep)
		return -FI_ENOTCONN;
	int ret = domain_->register_shm_twin(buf, len, access, fi_mr_key(original), 0, twin);
	if (ret)
		return ret;
	// Only the peer this transfer is for reaches it, as over the core (bind_internal).
	ret = fi_mr_bind(*twin, &conn->shm_ep->fid, 0);
	if (!ret)
		ret = fi_mr_enable(*twin);
	if (ret) {
		fi_close(&(*twin)->fid);
		*twin = nullptr;
	}
	return ret;
}

bool RxmEndpoint::bind_rndv_sources(TxOp *op, RxmConn *conn)
{
	// The receiver reads over the path the request arrives on (rndv_ep): over shm the
	// buffers rxm registered need their twins. A write rendezvous' sources are only read
	// locally (the peer exposes its buffer instead).
	bool twin = conn->tx_on_shm && !(op->hdr.flags & wire_flag::rndv_write);
	// One source, rxm's own registration, bound by the core: the receiver's rndv_done may
	// invalidate its key (wire_flag::rndv_invalidate; not over shm, not for a write
	// rendezvous, whose sources nobody reads remotely).
	op->key_invalidatable = false;
	bool one_own = op->own_mr_count == 1 && op->iov_count == 1 && !conn->tx_on_shm &&
		       !(op->hdr.flags & (wire_flag::rndv_write | wire_flag::cma_only));
	for (size_t k = 0; k < op->own_mr_count; k++) {
		bool bound = false;
		if (domain_->bind_internal(op->own_mr[k], conn->core_ep, &bound) == -FI_EAGAIN)
			return false;
		op->key_invalidatable = one_own && bound;
		if (!twin || op->own_shm_mr[k])
			continue;
		// Which segment it registered: the one offered under its key.
		uint64_t key = fi_mr_key(op->own_mr[k]);
		int ret = -FI_EINVAL;
		for (size_t i = 0; i < op->iov_count; i++)
			if (op->rndv_key[i] == key) {
				ret = twin_internal(conn, op->iov[i].iov_base, op->iov[i].iov_len,
						    FI_REMOTE_READ, op->own_mr[k],
						    &op->own_shm_mr[k]);
				break;
			}
		if (ret)
			// The peer's read then fails with a bad key and the message with it: an
			// error completion, never other memory.
			RXM_WARN(FI_LOG_EP_DATA, "shm twin of a rendezvous source: %s\n",
				 fi_strerror(-ret));
	}
	return true;
}

} // namespace rxm
