/* An ops extension a connected (FI_EP_MSG) byte-stream core offers so a utility provider on
 * top can stop taking messages from one connection while the others go on, even when all of
 * them share one receive context. ofi_rxm holds a peer that buffered more unexpected messages
 * than its budget (FI_OFI_RXM_UNEXPECTED_BUDGET): the peer's data then waits in the transport
 * (TCP backpressure), nothing is dropped, and release() resumes it. Opened with
 *     fi_open_ops(&core_domain->fid, OFI_RX_HOLD_OPS_NAME, 0, (void **)&ops, NULL)
 * Cores without it fail with -FI_ENOSYS; the user then throttles by other means (not reposting
 * that connection's own receive buffers, or holding back credits).
 *
 * Plain C so any provider can implement it; provider-neutral, like the rest of prov/util. */
#ifndef OFI_PROV_UTIL_RX_HOLD_OPS_H
#define OFI_PROV_UTIL_RX_HOLD_OPS_H

#include <stddef.h>

#include <rdma/fi_endpoint.h>

#define OFI_RX_HOLD_OPS_NAME "ofi_rx_hold_v1"

struct ofi_rx_hold_ops {
	size_t size;
	/* From the next incoming message of ep on, nothing more is read from its stream (what
	 * precedes that message is still handled) until release(). 0 or -FI_EINVAL. */
	int (*hold)(struct fid_ep *ep);
	/* Reads ep's stream again; its held message goes to the next posted receive. */
	int (*release)(struct fid_ep *ep);
};

#endif
