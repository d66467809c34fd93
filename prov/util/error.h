// util::Error: how constructors and helpers deep inside a call report an -FI_E* code.
// Every ops thunk catches it and returns its code, so provider code can simply
//     throw util::Error(-FI_EINVAL);
// from a constructor or helper instead of threading error codes through every layer.
// (std::bad_alloc becomes -FI_ENOMEM, anything else -FI_EOTHER.)
#ifndef OFI_PROV_UTIL_ERROR_H
#define OFI_PROV_UTIL_ERROR_H

#include <rdma/fi_errno.h>

#include <cstring>
#include <exception>
#include <type_traits>

namespace util {

class Error : public std::exception {
public:
	// 'code' is a negative fabric errno (-FI_EINVAL, ...); a positive value is negated.
	explicit Error(int code) noexcept : code_(code > 0 ? -code : code) {}
	int code() const noexcept { return code_; }
	const char *what() const noexcept override { return fi_strerror(-code_); }

private:
	int code_;
};

// Throws Error(rc) when rc is negative; returns rc otherwise.
inline int check(int rc)
{
	if (rc < 0)
		throw Error(rc);
	return rc;
}

// The integer an enum field of an application's struct holds. Such a field may hold any bit
// pattern, and loading one that names no enumerator through the enum type is undefined
// (UBSan reports it): read the integer, range-check it, then cast.
template <class Enum>
inline unsigned raw_enum(const Enum &field) noexcept
{
	static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(unsigned));
	unsigned raw;
	std::memcpy(&raw, &field, sizeof raw);
	return raw;
}

} // namespace util

#endif
