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

#endif
