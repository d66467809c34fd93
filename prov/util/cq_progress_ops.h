/* An ops extension of util's completion queues for a utility provider that drives a core's
 * progress through the core's CQ and reads it only when something is there: ofi_rxm's
 * progress looks at its core (and shm) CQ on every pass, and nearly every pass of a
 * busy-polling reader finds it empty. fi_cq_read on an empty CQ runs the core's progress
 * and then answers -FI_EAGAIN, but also pays the ops thunk, the fid checks and the read's
 * own bookkeeping; this entry runs the same progress and only says whether a read would
 * find something.
 *
 * Opened on the CQ itself with
 *     fi_open_ops(&cq->fid, OFI_CQ_PROGRESS_OPS_NAME, 0, (void **)&ops, NULL)
 * A CQ that reads differently from util's (a provider's own read path), or a foreign one,
 * fails with -FI_ENOSYS: the caller then reads the CQ with fi_cq_read as always.
 *
 * progress(cq): runs what fi_cq_read(cq, buf, 1) runs before it reads (the progress of the
 * CQ's domain, unless entries are already queued) and returns 1 when a read would return
 * something other than -FI_EAGAIN (entries, an error entry, or a wait fd that only a read
 * clears), 0 when it would return -FI_EAGAIN, -FI_EINVAL for a cq that is not util's. The
 * answer is exact for a caller that serialises its reads of cq; with other threads reading
 * or writing it is a hint (as any empty fi_cq_read is).
 *
 * Plain C so any provider can call it; provider-neutral, like the rest of prov/util. */
#ifndef OFI_PROV_UTIL_CQ_PROGRESS_OPS_H
#define OFI_PROV_UTIL_CQ_PROGRESS_OPS_H

#include <stddef.h>

#include <rdma/fi_eq.h>

#define OFI_CQ_PROGRESS_OPS_NAME "ofi_cq_progress_v1"

struct ofi_cq_progress_ops {
	size_t size;
	int (*progress)(struct fid_cq *cq);
};

#endif
