// OFI_MR_BIND_TO_EP: a registration flag between our own providers (DESIGN rule 1), not part
// of the public API. The caller promises to fi_mr_bind the registration to the one endpoint
// whose peer gets its key and to fi_mr_enable it before handing the key out. A provider
// that understands it may then make the key work only from then on, only over that
// endpoint, and only until the registration is closed (verbs: a type-2 memory window bound
// over the endpoint's QP to a cached local registration, instead of a registration with
// remote access per use). A provider that does not understand it refuses it
// (-FI_EBADFLAGS, as for any unknown flag) and the caller registers without it.
#ifndef OFI_PROV_UTIL_MR_BIND_FLAG_H
#define OFI_PROV_UTIL_MR_BIND_FLAG_H

#include <cstdint>

// A bit no fi_mr_reg flag of libfabric 1.17 uses.
inline constexpr uint64_t OFI_MR_BIND_TO_EP = 1ULL << 62;

// OFI_SEND_INVALIDATE: an fi_sendmsg flag between our own providers, with msg->data holding
// a key of the peer's. The send also invalidates that key at the peer, which must be a
// registration the peer made with OFI_MR_BIND_TO_EP and bound with fi_mr_bind +
// fi_mr_enable (both succeeded) to the endpoint this message arrives on: the peer's
// provider may then reuse what served the key without a system call once the region
// closes (verbs: the memory window goes back to a pool instead of ibv_dealloc_mw). Sending
// it for any other key may break the connection (verbs: the peer's device refuses the
// invalidation and the QP fails), so the caller learns from the peer that the key is such
// a one. Not combinable with FI_REMOTE_CQ_DATA. A provider that does not understand it
// refuses it (-FI_EBADFLAGS) and the caller sends without it.
inline constexpr uint64_t OFI_SEND_INVALIDATE = 1ULL << 61;

#endif
