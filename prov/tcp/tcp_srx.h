// TcpSrx: a shared receive context (fi_srx_context, FI_CLASS_SRX_CTX). Endpoints of the same
// domain bound to it (fi_ep_bind) take their receives from its one queue instead of their own,
// so the receive buffers an application posts no longer grow with the number of connections
// (ofi_rxm posts its bounce buffers here once per endpoint). A message completes on the CQ of
// the endpoint it arrived on. An endpoint whose next message finds the queue empty stops
// reading its socket (TCP backpressure) and is resumed by the next post.
//
// Not supported on a shared context: FI_MULTI_RECV (two streams would fill one buffer at once).
#ifndef PROV_TCP_TCP_SRX_H
#define PROV_TCP_TCP_SRX_H

#include "prov/tcp/tcp_connection.h"
#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_endpoint.h>

#include <deque>

namespace tcp {

class TcpDomain;
class TcpEndpoint;

class TcpSrx : public util::FidStorage<fid_ep>, public util::FidObject {
public:
	TcpSrx(TcpDomain &domain, const struct fi_rx_attr *attr, void *context);
	int close() override;
	struct fid_ep *ep_fid() { return &embedded_fid.pub; }
	TcpDomain &domain() { return domain_; }

	// fi_ops_msg (receives only) and fi_ops_ep
	ssize_t recv(void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context);
	ssize_t recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      void *context);
	ssize_t recvmsg(const struct fi_msg *msg, uint64_t flags);
	ssize_t cancel(void *context);
	ssize_t rx_size_left();

	// prov/util/rx_place_ops.h: who is offered every message first (place NULL: nobody).
	int set_placer(size_t head_len, ofi_rx_place_fn place, void *arg);

	// For bound endpoints, called with the domain lock held.
	RxQueue &queue() { return queue_; }
	void starved(TcpEndpoint *ep);  // resume ep when a receive is posted
	void forget(TcpEndpoint *ep);   // ep is closing or lost its connection

private:
	ssize_t post(const struct iovec *iov, size_t count, void *context, uint64_t flags);

	TcpDomain &domain_;
	uint64_t op_flags_;
	RxQueue queue_;
	std::deque<TcpEndpoint *> starved_;
};

} // namespace tcp

#endif
