/* An ops extension a connected (FI_EP_MSG) core offers when a message sent without a
 * receive posted by the peer is not buffered but stalls or fails the connection (verbs RC:
 * receiver-not-ready retries). A utility provider on top (ofi_rxm) opens it with
 *     fi_open_ops(&core_domain->fid, OFI_FLOW_CTRL_OPS_NAME, 0, (void **)&ops, NULL)
 * and, when that succeeds, runs credit flow control: each credit is one receive the peer has
 * posted for us. The core enforces the count; the policy (who may use the last credit, when
 * credits are returned) belongs to the user. Cores that buffer on their own (tcp) do not
 * offer it: fi_open_ops fails with -FI_ENOSYS.
 *
 * Plain C so any provider can implement it; provider-neutral, like the rest of prov/util. */
#ifndef OFI_PROV_UTIL_FLOW_CTRL_OPS_H
#define OFI_PROV_UTIL_FLOW_CTRL_OPS_H

#include <stdint.h>
#include <sys/types.h>

#include <rdma/fi_endpoint.h>

#define OFI_FLOW_CTRL_OPS_NAME "ofi_flow_ctrl_v1"

struct ofi_flow_ctrl_ops {
	size_t size;
	/* From now on, sends on ep that consume a peer receive (send, senddata, inject,
	 * writedata) need a credit; the peer has granted `credits` so far. Sends without one
	 * fail with -FI_EAGAIN. Call once, before the first send (e.g. when connected). */
	int (*enable)(struct fid_ep *ep, uint64_t credits);
	/* The peer posted `credits` more receives for us. */
	int (*add_credits)(struct fid_ep *ep, uint64_t credits);
	/* Credits left: sends that may still be posted (negative: an -FI_E* error). */
	ssize_t (*credits)(struct fid_ep *ep);
};

#endif
