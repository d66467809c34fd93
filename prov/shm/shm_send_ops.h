/* An ops extension of the shm domain (fi_open_ops) for a utility provider that frames its
 * own messages (ofi_rxm): a message goes into the next slots of the endpoint's own
 * transmit ring as [header, payload pieces], in one call, as fi_inject would send the same
 * bytes gathered, without the thunk, the iovec checks of the application path, a second
 * length check or the caller's copy of header and payload into one buffer first.
 * Opened with
 *     fi_open_ops(&shm_domain->fid, OFI_SHM_SEND_OPS_NAME, 0, (void **)&ops, NULL)
 * Plain C, like the other ops extensions.
 *
 * inject_framed(ep, hdr, hdr_len, payload, count, payload_len) sends hdr[0..hdr_len)
 * followed by the payload iovecs (count of them, payload_len bytes in all, each with a
 * base when not empty: the caller checked them, as it checks the application's) as one
 * message. It completes as fi_inject: the bytes are in the ring when it returns, no CQ
 * entry, a bound send counter counts it. Only when the endpoint is connected, nothing
 * waits to go before it (queued sends, answers owed to the peer) and the slots the
 * message takes are free (one slot, or several for a longer message): otherwise
 * -FI_EAGAIN and nothing changed, and the caller takes the plain path (fi_inject /
 * fi_send), which queues or reports as usual. -FI_EINVAL
 * for a bad argument (not a shm endpoint, count over the iov limit, NULL header).
 * Returns 0 when sent. Takes the shm domain's lock as fi_inject does. */
#ifndef OFI_PROV_SHM_SEND_OPS_H
#define OFI_PROV_SHM_SEND_OPS_H

#include "prov/util/framed_send_ops.h"

/* The shm domain answers this name and the provider-neutral OFI_FRAMED_SEND_OPS_NAME
 * (prov/util/framed_send_ops.h) with the same table, a struct ofi_framed_send_ops. */
#define OFI_SHM_SEND_OPS_NAME "ofi_shm_send_v1"

#endif
