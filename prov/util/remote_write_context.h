// OFI_OPT_REMOTE_WRITE_CONTEXT: an endpoint option between our own providers (DESIGN rule 1),
// not part of the public API. A peer's RMA write that carries remote CQ data and consumes no
// posted receive is reported with a NULL op_context (fi_cq(3)), so a layer above that drives
// many connected endpoints through one CQ (rxm) cannot tell which connection it came over,
// and cannot give its own application the writer's address (FI_SOURCE, fi_cq_readfrom).
// With this option set (optval: a `void *const *`, optlen: sizeof(void *)), the endpoint
// reports that pointer as the op_context of those completions instead of NULL. A provider
// that does not know it answers -FI_ENOPROTOOPT, and the caller does without.
#ifndef OFI_PROV_UTIL_REMOTE_WRITE_CONTEXT_H
#define OFI_PROV_UTIL_REMOTE_WRITE_CONTEXT_H

// In the provider-specific range (fi_ext.h's convention: negative, a provider code << 16),
// with a code no provider of libfabric 1.17 uses.
inline constexpr int OFI_OPT_REMOTE_WRITE_CONTEXT = -(0x0f1 << 16);

#endif
