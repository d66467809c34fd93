// Logging for our providers: the public FI_WARN/FI_INFO/FI_DBG macros of fi_log.h with the
// provider's struct fi_provider, plus one helper for the common "call failed" message.
#ifndef OFI_SRC_OFI_LOG_H
#define OFI_SRC_OFI_LOG_H

#include <rdma/fi_errno.h>
#include <rdma/providers/fi_log.h>

#include <errno.h>

// Logs at WARN that 'what' failed with the (negative) fi_errno 'ret', e.g.
// OFI_WARN_ERR(&tcp_prov, FI_LOG_EP_CTRL, "connect", ret);
#define OFI_WARN_ERR(prov, subsys, what, ret)                                          \
	FI_WARN(prov, subsys, "%s: %s (%d)\n", what, fi_strerror((int)-(ret)), (int)(ret))

#endif
