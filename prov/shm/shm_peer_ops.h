/* An ops extension of the shm domain (fi_open_ops) for a utility provider that must prove
 * who the other end of a shm connection is with kernel facts: ofi_rxm ties the process at
 * the far end of its tcp connection to the one at the far end of the shm connection it
 * moves that peer to (prov/rxm/rxm_shm.h). Opened with
 *     fi_open_ops(&shm_domain->fid, OFI_SHM_PEER_OPS_NAME, 0, (void **)&ops, NULL)
 * Plain C, like the other ops extensions. */
#ifndef OFI_PROV_SHM_PEER_OPS_H
#define OFI_PROV_SHM_PEER_OPS_H

#include <stddef.h>
#include <sys/types.h>

#include <rdma/fi_endpoint.h>

#define OFI_SHM_PEER_OPS_NAME "ofi_shm_peer_v1"

struct ofi_shm_peer_ops {
	size_t size;
	/* The pid the kernel reports (SO_PEERCRED) for the process at the other end of a
	 * connected shm endpoint's socket. 0, -FI_EINVAL (not a shm endpoint), -FI_ENOTCONN
	 * (not connected) or another negative errno. */
	int (*peer_pid)(struct fid_ep *ep, pid_t *pid);
};

#endif
