/* An ops extension a connected (FI_EP_MSG) core offers so a utility provider on top can say
 * that one connection will stay quiet: its user moved that peer's traffic elsewhere (ofi_rxm's
 * same-host switch to shm) and keeps the connection for liveness and the odd operation. While
 * a quiet connection has nothing of its own outstanding, the core may look at its socket less
 * often than on every progress pass (our tcp: the fd becomes lazy in the progress engine,
 * asked every ProgressEngine::kLazyEpollEvery passes and always before sleeping), so a busy
 * poller pays no system call per pass for it. Anything posted on it is looked at as before
 * until it completes; data the peer sends on it is still taken, perhaps a little later.
 * Opened with
 *     fi_open_ops(&core_domain->fid, OFI_QUIET_OPS_NAME, 0, (void **)&ops, NULL)
 * Cores without it fail with -FI_ENOSYS (nothing changes then).
 *
 * Plain C so any provider can implement it; provider-neutral, like the rest of prov/util. */
#ifndef OFI_PROV_UTIL_QUIET_OPS_H
#define OFI_PROV_UTIL_QUIET_OPS_H

#include <stddef.h>

#include <rdma/fi_endpoint.h>

#define OFI_QUIET_OPS_NAME "ofi_quiet_v1"

struct ofi_quiet_ops {
	size_t size;
	/* quiet != 0: ep's connection is expected to stay quiet; 0: back to normal.
	 * 0 or -FI_EINVAL (not one of this core's endpoints). */
	int (*set_quiet)(struct fid_ep *ep, int quiet);
};

#endif
