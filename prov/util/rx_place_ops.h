/* An ops extension a connected (FI_EP_MSG) byte-stream core offers on its shared receive
 * contexts, so a utility provider that frames its own messages (a header at the start of
 * each) can have a message placed straight into the buffer it is meant for, instead of into
 * one of the context's receives and then copied. ofi_rxm uses it over tcp: an eager message
 * that matches a posted application receive lands in that receive (one copy, the kernel's,
 * as with a raw socket) instead of in a bounce buffer copied out after.
 *
 * Opened with
 *     fi_open_ops(&core_domain->fid, OFI_RX_PLACE_OPS_NAME, 0, (void **)&ops, NULL)
 * Cores without it fail with -FI_ENOSYS: messages then go to the posted receives as always.
 *
 * set_placer(srx, head_len, place, arg): from then on, every message arriving on an endpoint
 * bound to srx is first offered to place(arg, request), before any of it is placed and before
 * it takes one of srx's receives. The request gives the message's length, its first head_len
 * bytes (NULL when the message is shorter or they have not arrived yet), and the context of
 * the receive it takes if declined (NULL when srx has none: the message then waits for a post
 * and is offered again). place returns
 *   0: declined; the message goes to that receive (the caller learns of it: rx_context), or
 *   1: taken; the core places the whole message (head included) into iov[0..iov_count),
 *      whose lengths add up to at least msg_len, and reports it with a completion whose
 *      op_context is `context` (flags FI_RECV|FI_MSG, len = msg_len), or an error completion
 *      for that context (FI_ECANCELED) if the stream ends first; srx's receives are untouched.
 * When may_take is 0 the message cannot be taken (it resumes after being parked with bytes
 * already placed): place must decline; it is told only which receive the message takes.
 * place runs inside the core's progress, with the core's domain lock held, on whatever thread
 * progresses the domain; it must not call into the core. set_placer(srx, 0, NULL, NULL)
 * removes it. Returns 0 or -FI_EINVAL.
 *
 * Plain C so any provider can implement it; provider-neutral, like the rest of prov/util. */
#ifndef OFI_PROV_UTIL_RX_PLACE_OPS_H
#define OFI_PROV_UTIL_RX_PLACE_OPS_H

#include <stddef.h>
#include <sys/uio.h>

#include <rdma/fi_endpoint.h>

#define OFI_RX_PLACE_OPS_NAME "ofi_rx_place_v1"
#define OFI_RX_PLACE_MAX_IOV 5

struct ofi_rx_place_request {
	/* In. */
	const void *head;     /* the message's first head_len bytes, or NULL */
	size_t msg_len;
	void *rx_context;     /* the receive the message takes if declined, or NULL */
	int may_take;
	/* Out, when taken. */
	struct iovec iov[OFI_RX_PLACE_MAX_IOV];
	size_t iov_count;
	void *context;
};

typedef int (*ofi_rx_place_fn)(void *arg, struct ofi_rx_place_request *request);

struct ofi_rx_place_ops {
	size_t size;
	int (*set_placer)(struct fid_ep *srx, size_t head_len, ofi_rx_place_fn place, void *arg);
};

#endif
