// Compile-time generation of ops-table entries from member functions.
//
// An ops table entry has a C signature such as
//     ssize_t (*send)(struct fid_ep *ep, const void *buf, size_t len, ...);
// Thunk<T, Call, Entry>::call has exactly that signature: it recovers the T object from the
// fid, invokes Call (a captureless lambda forwarding to the member function, see
// UTIL_OPS_ENTRY) and converts any C++ exception into an -FI_E* code (util::Error gives its
// code, std::bad_alloc -FI_ENOMEM, anything else -FI_EOTHER). When T has no member
// callable with the entry's arguments, the entry becomes a function returning -FI_ENOSYS.
#ifndef OFI_PROV_UTIL_OPS_THUNK_H
#define OFI_PROV_UTIL_OPS_THUNK_H

#include "prov/util/error.h"
#include "prov/util/fid_object.h"

#include <new>
#include <type_traits>
#include <utility>

namespace util {
namespace detail {

// What an entry returns when it cannot run the operation: errno-style returns get the
// negative code, counters read as 0 and strerror entries give a fixed text.
template <class R>
R failure_value(int negative_errno) noexcept
{
	if constexpr (std::is_same_v<R, void>)
		return;
	else if constexpr (std::is_pointer_v<R>)
		return nullptr;
	else if constexpr (std::is_unsigned_v<R>)
		return 0;
	else
		return static_cast<R>(negative_errno);
}

// The fid handed to an entry: 'struct fid *' itself or a struct starting with one.
inline const struct fid *as_fid(const struct fid *f) noexcept { return f; }
template <class PublicFid>
const struct fid *as_fid(const PublicFid *f) noexcept
{
	return f ? &f->fid : nullptr;
}

// The -FI_ENOSYS entry for one entry type; shared by all classes so that tables can be
// checked at compile time (util::implemented).
template <class Entry>
struct Unsupported;

template <class R, class FidPtr, class... Args>
struct Unsupported<R (*)(FidPtr, Args...)> {
	static R call(FidPtr, Args...) noexcept { return failure_value<R>(-FI_ENOSYS); }
};

template <class T, class Call, class Entry>
struct Thunk;

template <class T, class Call, class R, class FidPtr, class... Args>
struct Thunk<T, Call, R (*)(FidPtr, Args...)> {
	static constexpr bool kCallable = std::is_invocable_v<Call, T &, Args...>;

	static R call(FidPtr fid, Args... args) noexcept
	{
		T *self = fid_cast_trusted<T>(as_fid(fid));
		if (!self)
			return failure_value<R>(-FI_EINVAL);
		try {
			if constexpr (std::is_same_v<R, void>)
				Call{}(*self, std::forward<Args>(args)...);
			else
				return static_cast<R>(Call{}(*self, std::forward<Args>(args)...));
		} catch (const Error &e) {
			return failure_value<R>(e.code());
		} catch (const std::bad_alloc &) {
			return failure_value<R>(-FI_ENOMEM);
		} catch (...) {
			return failure_value<R>(-FI_EOTHER);
		}
	}
};

// Picks the thunk when T implements the operation, the -FI_ENOSYS stub otherwise.
template <class T, class Entry, class Call>
constexpr Entry make_entry(Call) noexcept
{
	using ThunkType = Thunk<T, Call, Entry>;
	if constexpr (ThunkType::kCallable)
		return &ThunkType::call;
	else
		return &Unsupported<Entry>::call;
}

} // namespace detail

// True when a table entry runs a member (false: the -FI_ENOSYS stub). Usable in
// static_assert to catch a member whose signature does not match the entry, e.g.
//     static_assert(util::implemented(util::make_msg_ops<TcpEndpoint>().send));
template <class Entry>
constexpr bool implemented(Entry entry) noexcept
{
	return entry != &detail::Unsupported<Entry>::call;
}
} // namespace util

// static_assert that a table entry runs a member, placed beside each member a provider
// implements. GCC does not fold function-address comparisons to constants under
// -fsanitize=address, so the ASan build leaves the check to the other builds.
#ifdef __SANITIZE_ADDRESS__
#define UTIL_ASSERT_IMPLEMENTED(entry) static_assert(true)
#else
#define UTIL_ASSERT_IMPLEMENTED(entry)                                                        \
	static_assert(::util::implemented(entry), #entry " runs no member: check its signature")
#endif

// One table entry: 'table.field' forwards to 'T::method' (if T has one callable with the
// entry's arguments, else -FI_ENOSYS). The lambda is SFINAE-friendly through its trailing
// return type, which is what makes the detection work.
#define UTIL_OPS_ENTRY(T, table, field, method)                                              \
	table.field = ::util::detail::make_entry<T, decltype(table.field)>(                  \
		[](auto &self, auto &&...args)                                                \
			-> decltype(self.method(std::forward<decltype(args)>(args)...)) {    \
			return self.method(std::forward<decltype(args)>(args)...);           \
		})

#endif
