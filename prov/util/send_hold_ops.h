/* An ops extension a connected (FI_EP_MSG) core that coalesces sends offers to a utility
 * provider on top: "hold a send back for the next progress pass only when it carries
 * FI_MORE". A core like our tcp may otherwise hold, under manual progress, any send that
 * follows another in the same pass and whose completion its caller wants, counting on the
 * caller's next CQ read to send it. ofi_rxm cannot promise that read: it sends for the
 * application's injects, for selective completions and for its own protocol (rendezvous
 * answers, the shm switch's marker), after which the application may wait on something
 * else entirely (an out-of-band barrier at the end of a run) and the peer would wait for
 * the held bytes forever. rxm marks with FI_MORE the sends it knows its application will
 * come back for and asks this mode once per core domain.
 * Opened with
 *     fi_open_ops(&core_domain->fid, OFI_SEND_HOLD_OPS_NAME, 0, (void **)&ops, NULL)
 * Cores without it fail with -FI_ENOSYS (they hold nothing back, or have their own rule).
 *
 * Plain C so any provider can implement it; provider-neutral, like the rest of prov/util. */
#ifndef OFI_PROV_UTIL_SEND_HOLD_OPS_H
#define OFI_PROV_UTIL_SEND_HOLD_OPS_H

#include <stddef.h>

#include <rdma/fi_domain.h>

#define OFI_SEND_HOLD_OPS_NAME "ofi_send_hold_v1"

struct ofi_send_hold_ops {
	size_t size;
	/* From now on the domain's endpoints hold back only FI_MORE sends.
	 * 0 or -FI_EINVAL (not one of this core's domains). */
	int (*hold_only_more)(struct fid_domain *domain);
};

#endif
