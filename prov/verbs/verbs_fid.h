// How the verbs provider's C++ objects meet the C API: each object embeds its public fid
// struct in a FidHolder, ops tables point at noexcept thunks generated from member functions,
// and unsupported entries point at a generated function returning -FI_ENOSYS.
#ifndef OFI_PROV_VERBS_FID_H
#define OFI_PROV_VERBS_FID_H

#include <cstdint>
#include <new>
#include <type_traits>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

namespace verbs {

// The public struct comes first, so a pointer to it (or to its leading struct fid) is a
// pointer to the holder. The tag tells which C++ type owns it, so a fid from another
// provider or a stale pointer of the wrong kind is refused instead of misused.
template <typename PublicFid, typename Owner>
struct FidHolder {
	PublicFid pub{};
	uint32_t tag = Owner::kTag;
	Owner *owner = nullptr;

	void init(Owner *self, size_t fclass, void *context, struct fi_ops *ops)
	{
		owner = self;
		fid_of()->fclass = fclass;
		fid_of()->context = context;
		fid_of()->ops = ops;
	}
	struct fid *fid_of() { return reinterpret_cast<struct fid *>(&pub); }

	static Owner *recover(const void *p)
	{
		if (!p)
			return nullptr;
		auto *holder = static_cast<const FidHolder *>(p);
		if (holder->tag != Owner::kTag)
			return nullptr;
		return holder->owner;
	}
	void invalidate() { tag = 0; owner = nullptr; }
};

template <typename R>
constexpr R failure_value(int code)
{
	if constexpr (std::is_pointer_v<R>)
		return "invalid fabric object";
	else
		return static_cast<R>(code);
}

// Op<&Type::method>::call is a C function whose first argument is the fid; the rest are
// forwarded to the member function of the object that owns the fid.
template <auto Method>
struct Op;

template <typename Owner, typename R, typename... Args, R (Owner::*Method)(Args...)>
struct Op<Method> {
	template <typename Fid>
	static R call(Fid *fid, Args... args) noexcept
	{
		Owner *self = Owner::from_fid(fid);
		if (!self)
			return failure_value<R>(-FI_EINVAL);
		try {
			return (self->*Method)(args...);
		} catch (const std::bad_alloc &) {
			return failure_value<R>(-FI_ENOMEM);
		} catch (...) {
			return failure_value<R>(-FI_EOTHER);
		}
	}
};

template <typename Fn>
struct Unsupported;

template <typename R, typename... Args>
struct Unsupported<R (*)(Args...)> {
	static R call(Args...) noexcept { return static_cast<R>(-FI_ENOSYS); }
};

#define VERBS_UNSUPPORTED(table, member) \
	((table).member = ::verbs::Unsupported<decltype((table).member)>::call)

} // namespace verbs

#endif
