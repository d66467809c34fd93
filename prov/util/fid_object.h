// FidObject: the C++ side of every object handed to applications as a fid.
//
// Each object embeds its public fid_* struct inside an EmbeddedFid. A small header placed
// right before the public struct carries a magic tag and a pointer back to the C++ object,
// so a fid coming back from the application is turned into the object with one checked
// helper (fid_cast). A fid of the wrong class, a foreign fid or NULL yields nullptr, which
// callers turn into -FI_EINVAL, never a crash.
#ifndef OFI_PROV_UTIL_FID_OBJECT_H
#define OFI_PROV_UTIL_FID_OBJECT_H

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace util {

class FidObject;
class Waitable;

// Value of FidHeader::magic for live objects; cleared when the object dies so a stale
// fid is refused instead of being used.
inline constexpr uint64_t kFidMagic = 0x6f66692d75746c21ULL;  // "ofi-utl!"

struct FidHeader {
	uint64_t magic = kFidMagic;
	FidObject *owner = nullptr;
};

// The public struct (fid_ep, fid_cq, ...) preceded by the header. Every fid_* struct starts
// with 'struct fid', so &pub.fid == &pub, and the header sits at a fixed distance before it.
template <class PublicFid>
struct EmbeddedFid {
	FidHeader header;
	PublicFid pub{};
};

// Base class holding the embedded fid. Objects list it BEFORE FidObject among their bases,
// so the storage is constructed before FidObject wires the header:
//     class Endpoint : public FidStorage<fid_ep>, public FidObject { ... };
template <class PublicFid>
struct FidStorage {
	EmbeddedFid<PublicFid> embedded_fid;
};

// Distance from the header to the public struct; the same for all fid_* types because
// they are all 8-byte aligned.
inline constexpr std::size_t kFidHeaderDistance = sizeof(FidHeader);

// Returns the header of a fid created by prov/util, or nullptr for anything else. Inline:
// every ops thunk (each fi_tsend, fi_trecv, fi_cq_read) starts with it, and the call cost
// as much as the check.
inline FidHeader *fid_header(const struct fid *fid) noexcept
{
	if (!fid)
		return nullptr;
	auto *header = reinterpret_cast<FidHeader *>(
		reinterpret_cast<uintptr_t>(fid) - sizeof(FidHeader));
	if (header->magic != kFidMagic || !header->owner) [[unlikely]]
		return nullptr;
	return header;
}

class FidObject {
public:
	FidObject(const FidObject &) = delete;
	FidObject &operator=(const FidObject &) = delete;
	virtual ~FidObject();

	// The embedded public fid (fid.fclass, fid.context, fid.ops).
	struct fid *fid() noexcept { return fid_; }
	const struct fid *fid() const noexcept { return fid_; }
	size_t fclass() const noexcept { return fid_->fclass; }
	void *context() const noexcept { return fid_->context; }
	// The object's Waitable side (CQs, EQs, counters), nullptr for the others. A virtual
	// call instead of a cross-cast: fi_trywait runs before every sleep of a blocking
	// reader, and dynamic_cast's type walk cost ~450 instructions per message there.
	virtual Waitable *waitable() noexcept { return nullptr; }

	// Objects that depend on this one (endpoints on a domain, bindings of a CQ, ...) hold a
	// reference; close() refuses with -FI_EBUSY while any is held.
	void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
	void unref() noexcept { refs_.fetch_sub(1, std::memory_order_release); }
	int ref_count() const noexcept { return refs_.load(std::memory_order_acquire); }
	bool busy() const noexcept { return ref_count() > 0; }

	// fi_close: default refuses while referenced, otherwise destroys the object. Derived
	// classes that override it check busy() first, release their own resources and then
	// return Base::close() (which deletes this).
	virtual int close();

	// Refuses the fid from now on (fid_cast and the ops thunks see a dead object) without
	// destroying the object: for one that must outlive its fi_close, e.g. a verbs endpoint
	// whose request slots the device may still complete into.
	void retire_fid() noexcept;

protected:
	// 'embedded' is the FidStorage of the derived class (constructed before us); its
	// header is wired here.
	template <class PublicFid>
	FidObject(EmbeddedFid<PublicFid> &embedded, size_t fclass, void *context)
	    : fid_(reinterpret_cast<struct fid *>(&embedded.pub))
	{
		static_assert(offsetof(EmbeddedFid<PublicFid>, pub) == kFidHeaderDistance,
			      "public fid must follow the header directly");
		embedded.header.owner = this;
		fid_->fclass = fclass;
		fid_->context = context;
	}

private:
	struct fid *fid_;
	std::atomic<int> refs_{0};
};

// Checked recovery: nullptr unless 'fid' is a live prov/util object of class 'fclass'
// (FI_CLASS_UNSPEC accepts any class) whose C++ type is (or derives from) T.
template <class T>
T *fid_cast(const struct fid *fid, size_t fclass = FI_CLASS_UNSPEC) noexcept
{
	FidHeader *header = fid_header(fid);
	if (!header)
		return nullptr;
	if (fclass != FI_CLASS_UNSPEC && fid->fclass != fclass)
		return nullptr;
	return dynamic_cast<T *>(header->owner);
}

// Recovery for ops thunks: the ops table of T is only installed on T objects, so after the
// magic check a static_cast is enough (no RTTI walk on the data path).
template <class T>
T *fid_cast_trusted(const struct fid *fid) noexcept
{
	FidHeader *header = fid_header(fid);
	return header ? static_cast<T *>(header->owner) : nullptr;
}

} // namespace util

#endif
