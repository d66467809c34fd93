/* An ops extension a connected (FI_EP_MSG) core offers when a whole arriving message sits
 * contiguously in its own memory (shm: one ring slot): a utility provider that frames its
 * own messages can consume it there, during the core's progress, instead of having the core
 * copy it into one of its posted receives and report it with a CQ entry that the utility
 * provider reads back, copies out of and reposts. ofi_rxm uses it over shm: an eager
 * message is matched and copied once, from the ring into the application's buffer.
 *
 * Opened on the core's domain with
 *     fi_open_ops(&core_domain->fid, OFI_RX_INPLACE_OPS_NAME, 0, (void **)&ops, NULL)
 * Cores without it fail with -FI_ENOSYS: messages then go to the posted receives as always.
 *
 * set_consumer(ep, consume, arg): from then on, every message arriving on ep is first shown
 * to consume(arg, request), before it takes one of ep's receives. When the core holds it
 * whole in one piece (and it carries no remote CQ data), request->msg points at the message
 * in the core's memory and request->len is its length (checked by the core against that
 * memory: all of msg[0..len) may be read); otherwise msg is NULL, len is the message's
 * length, and, unless it comes in pieces (below), the message cannot be taken (consume
 * must decline: it learns only which receive the message takes, so it can keep later
 * messages behind it). That memory may be shared with the peer, who can change it while
 * it is read: copy what you branch on out first, and trust nothing in it.
 * When the core holds the message whole but in pieces (shm: a message over several ring
 * slots, all of them arrived), msg is NULL and pieces[0..piece_count) are its bytes in order
 * (each checked by the core against its memory; the lengths add up to len; shared with the
 * peer like msg). A consumer that does not know pieces simply declines such a message, as
 * one with msg NULL. piece_count is 0 otherwise: a request brace-initialised with only the
 * first three fields (tcp's) keeps meaning "contiguous or not at all".
 * rx_context is the context of the receive the message takes if declined, or NULL (no
 * receive posted: the message then waits and is offered again on a later pass). consume
 * returns 1 when it took the message (the core drops it: no receive is used, no CQ entry is
 * written) or 0 to decline. consume runs inside the core's progress, with the core's domain
 * lock held, on whatever thread progresses the domain; it must not call into the core.
 * set_consumer(ep, NULL, NULL) removes it (call it before closing ep or freeing arg).
 * Returns 0 or -FI_EINVAL.
 *
 * Plain C so any provider can implement it; provider-neutral, like the rest of prov/util. */
#ifndef OFI_PROV_UTIL_RX_INPLACE_OPS_H
#define OFI_PROV_UTIL_RX_INPLACE_OPS_H

#include <stddef.h>
#include <sys/uio.h>

#include <rdma/fi_endpoint.h>

#define OFI_RX_INPLACE_OPS_NAME "ofi_rx_inplace_v1"

struct ofi_rx_inplace_request {
	const void *msg;  /* the whole message, in the core's (possibly shared) memory, or NULL */
	size_t len;
	void *rx_context; /* the receive the message takes if declined, or NULL */
	/* Appended: msg NULL and the whole message in pieces, else NULL and 0. C++ callers
	 * that initialise only the fields above get those defaults without a warning. */
#ifdef __cplusplus
	const struct iovec *pieces = nullptr;
	size_t piece_count = 0;
#else
	const struct iovec *pieces;
	size_t piece_count;
#endif
};

typedef int (*ofi_rx_inplace_fn)(void *arg, const struct ofi_rx_inplace_request *request);

struct ofi_rx_inplace_ops {
	size_t size;
	int (*set_consumer)(struct fid_ep *ep, ofi_rx_inplace_fn consume, void *arg);
};

#endif
