// util::random_key: 64 unpredictable bits for provider-chosen memory keys (DESIGN rule 8:
// a peer must not be able to guess the key of memory it was not given). Drawn from the
// kernel's CSPRNG (getrandom) in batches, so a registration costs one system call per
// kBatch keys. Never 0 (reads as "no key") nor FI_KEY_NOTAVAIL. Thread-safe (per-thread
// batches); a child after fork() draws fresh ones.
#ifndef OFI_PROV_UTIL_RANDOM_KEY_H
#define OFI_PROV_UTIL_RANDOM_KEY_H

#include <cstdint>

namespace util {

uint64_t random_key() noexcept;

} // namespace util

#endif
