// Execution of emulated atomics at the target: rxm carries atomic requests as messages and
// the target applies them to its registered memory, element by element, under one lock per
// domain (so emulated atomics are atomic with respect to each other, not to CPU stores).
#ifndef OFI_PROV_RXM_ATOMIC_EXEC_H
#define OFI_PROV_RXM_ATOMIC_EXEC_H

#include <cstddef>
#include <cstdint>

namespace rxm {

enum class AtomicKind { write, fetch, compare };

// Whether op is valid for datatype in this kind of call (fi_atomicvalid and friends).
bool atomic_supported(uint8_t op, uint8_t datatype, AtomicKind kind);

// Largest element count one request can carry when messages hold eager_size payload bytes:
// the request (fixed part, operands, compare values) and the response (status, old values)
// must each fit one eager message.
size_t atomic_max_count(uint8_t datatype, AtomicKind kind, size_t eager_size);

// Applies op to count elements at target. old (may be null) receives the previous values.
// operand is ignored by FI_ATOMIC_READ; compare is used by the compare ops only.
// Returns 0 or -FI_EOPNOTSUPP.
int atomic_apply(uint8_t op, uint8_t datatype, void *target, const void *operand,
		 const void *compare, void *old, size_t count);

} // namespace rxm

#endif
