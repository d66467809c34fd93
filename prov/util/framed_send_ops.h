/* An ops extension a core provider offers to a utility provider that frames its own
 * messages (ofi_rxm): "send this header followed by these payload pieces as one message,
 * now, as fi_inject would send the same bytes gathered". It saves the caller's copy of
 * header and payload into one buffer first, the inject size limit of the plain fi_inject
 * (the core decides what it can take in one step), and the core's completion the caller
 * would read back for a larger fi_send.
 * Opened on the core's domain with
 *     fi_open_ops(&core_domain->fid, OFI_FRAMED_SEND_OPS_NAME, 0, (void **)&ops, NULL)
 * Cores without it fail with -FI_ENOSYS; the caller then uses fi_inject / fi_send.
 *
 * inject_framed(ep, hdr, hdr_len, payload, count, payload_len) sends hdr[0..hdr_len)
 * followed by the payload iovecs (count of them, payload_len bytes in all, each with a base
 * when not empty: the caller checked them, as it checks the application's) as one message
 * on the connected endpoint ep. It completes as fi_inject: every byte has left the
 * caller's buffers when it returns 0 (sent, or copied by the core), no CQ entry is
 * written, a bound send counter counts it. It applies only when the endpoint is connected
 * and nothing waits to go before the message (queued sends, answers owed to the peer), and
 * the core can take the message in one step (a ring slot free, a socket with room, a size
 * within the core's bound): otherwise -FI_EAGAIN and nothing changed, and the caller takes
 * the plain path (fi_inject / fi_send), which queues or reports as usual. -FI_EINVAL for
 * a bad argument (not an endpoint of that core, count over the iov limit, NULL header).
 * Takes the core domain's lock as fi_inject does.
 *
 * Our shm (prov/shm/shm_send_ops.h: into the endpoint's ring) and our tcp (one sendmsg on
 * the stream) offer it. Plain C so any provider can implement it; provider-neutral, like
 * the rest of prov/util. */
#ifndef OFI_PROV_UTIL_FRAMED_SEND_OPS_H
#define OFI_PROV_UTIL_FRAMED_SEND_OPS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <rdma/fi_endpoint.h>

#define OFI_FRAMED_SEND_OPS_NAME "ofi_framed_send_v1"

struct ofi_framed_send_ops {
	size_t size;
	ssize_t (*inject_framed)(struct fid_ep *ep, const void *hdr, size_t hdr_len,
				 const struct iovec *payload, size_t count, size_t payload_len);
};

#endif
