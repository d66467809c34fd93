// Element-wise atomic operations for the emulated atomics (see rxm_atomic_exec.h).
#include "prov/rxm/rxm_atomic_exec.h"

#include "prov/rxm/rxm_wire.h"

#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>

#include <cstring>
#include <type_traits>

namespace rxm {

namespace {

bool is_compare(uint8_t op) { return op >= FI_CSWAP && op <= FI_MSWAP; }
bool is_bitwise(uint8_t op)
{
	return op == FI_BOR || op == FI_BAND || op == FI_BXOR || op == FI_MSWAP;
}

// The new value of one element, or false when op does not apply to T.
template <typename T> bool combine(uint8_t op, T cur, T arg, T cmp, T *out)
{
	switch (op) {
	case FI_MIN: *out = arg < cur ? arg : cur; return true;
	case FI_MAX: *out = arg > cur ? arg : cur; return true;
	case FI_SUM: *out = static_cast<T>(cur + arg); return true;
	case FI_PROD: *out = static_cast<T>(cur * arg); return true;
	case FI_LOR: *out = (cur || arg) ? 1 : 0; return true;
	case FI_LAND: *out = (cur && arg) ? 1 : 0; return true;
	case FI_LXOR: *out = ((cur != 0) != (arg != 0)) ? 1 : 0; return true;
	case FI_ATOMIC_READ: *out = cur; return true;
	case FI_ATOMIC_WRITE: *out = arg; return true;
	case FI_CSWAP: *out = cmp == cur ? arg : cur; return true;
	case FI_CSWAP_NE: *out = cmp != cur ? arg : cur; return true;
	case FI_CSWAP_LE: *out = cmp <= cur ? arg : cur; return true;
	case FI_CSWAP_LT: *out = cmp < cur ? arg : cur; return true;
	case FI_CSWAP_GE: *out = cmp >= cur ? arg : cur; return true;
	case FI_CSWAP_GT: *out = cmp > cur ? arg : cur; return true;
	default: break;
	}
	if constexpr (std::is_integral_v<T>) {
		switch (op) {
		case FI_BOR: *out = cur | arg; return true;
		case FI_BAND: *out = cur & arg; return true;
		case FI_BXOR: *out = cur ^ arg; return true;
		case FI_MSWAP: *out = static_cast<T>((cur & ~cmp) | (arg & cmp)); return true;
		default: break;
		}
	}
	return false;
}

template <typename T>
int apply_typed(uint8_t op, uint8_t *target, const uint8_t *operand, const uint8_t *compare,
		uint8_t *old, size_t count)
{
	for (size_t i = 0; i < count; i++) {
		// memcpy: the target and the operands need not be aligned.
		T cur, arg{}, cmp{}, next;
		memcpy(&cur, target + i * sizeof(T), sizeof(T));
		if (operand)
			memcpy(&arg, operand + i * sizeof(T), sizeof(T));
		if (compare)
			memcpy(&cmp, compare + i * sizeof(T), sizeof(T));
		if (!combine<T>(op, cur, arg, cmp, &next))
			return -FI_EOPNOTSUPP;
		if (old)
			memcpy(old + i * sizeof(T), &cur, sizeof(T));
		if (op != FI_ATOMIC_READ)
			memcpy(target + i * sizeof(T), &next, sizeof(T));
	}
	return 0;
}

} // namespace

bool atomic_supported(uint8_t op, uint8_t datatype, AtomicKind kind)
{
	if (atomic_datatype_size(datatype) == 0 || op >= FI_ATOMIC_OP_LAST)
		return false;
	bool floating = datatype == FI_FLOAT || datatype == FI_DOUBLE;
	if (floating && is_bitwise(op))
		return false;
	switch (kind) {
	case AtomicKind::write:
		return !is_compare(op) && op != FI_ATOMIC_READ;
	case AtomicKind::fetch:
		return !is_compare(op);
	case AtomicKind::compare:
		return is_compare(op);
	}
	return false;
}

size_t atomic_max_count(uint8_t datatype, AtomicKind kind, size_t eager_size)
{
	size_t elem = atomic_datatype_size(datatype);
	// Room for the most targets a request may name, so that the count holds for every form.
	size_t head = kAtomicRequestFixedSize + (kAtomicMaxTargets - 1) * kAtomicTargetSize;
	if (!elem || eager_size < head)
		return 0;
	size_t per_element = kind == AtomicKind::compare ? 2 * elem : elem;
	size_t request = (eager_size - head) / per_element;
	size_t response = (eager_size - kAtomicResponseFixedSize) / elem;
	return request < response ? request : response;
}

int atomic_apply(uint8_t op, uint8_t datatype, void *target, const void *operand,
		 const void *compare, void *old, size_t count)
{
	auto *t = static_cast<uint8_t *>(target);
	auto *a = static_cast<const uint8_t *>(operand);
	auto *c = static_cast<const uint8_t *>(compare);
	auto *o = static_cast<uint8_t *>(old);
	switch (datatype) {
	case FI_INT8: return apply_typed<int8_t>(op, t, a, c, o, count);
	case FI_UINT8: return apply_typed<uint8_t>(op, t, a, c, o, count);
	case FI_INT16: return apply_typed<int16_t>(op, t, a, c, o, count);
	case FI_UINT16: return apply_typed<uint16_t>(op, t, a, c, o, count);
	case FI_INT32: return apply_typed<int32_t>(op, t, a, c, o, count);
	case FI_UINT32: return apply_typed<uint32_t>(op, t, a, c, o, count);
	case FI_INT64: return apply_typed<int64_t>(op, t, a, c, o, count);
	case FI_UINT64: return apply_typed<uint64_t>(op, t, a, c, o, count);
	case FI_FLOAT: return apply_typed<float>(op, t, a, c, o, count);
	case FI_DOUBLE: return apply_typed<double>(op, t, a, c, o, count);
	default: return -FI_EOPNOTSUPP;
	}
}

} // namespace rxm
