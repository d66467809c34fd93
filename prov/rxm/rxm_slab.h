// Slab: memory for rxm's bounce buffers, mapped anonymously instead of taken from the heap.
// Pages become resident only when a message is written into them, and unmapping gives them
// back at once: heap slabs of a few hundred KiB were zero-filled (std::vector) or moved the
// allocator's mmap threshold so that each endpoint open/close left resident heap behind.
#ifndef OFI_PROV_RXM_SLAB_H
#define OFI_PROV_RXM_SLAB_H

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>

namespace rxm {

class Slab {
public:
	Slab() = default;
	~Slab() { release(); }
	Slab(const Slab &) = delete;
	Slab &operator=(const Slab &) = delete;

	// Replaces the slab with `bytes` of fresh memory; false when the mapping fails.
	bool allocate(size_t bytes)
	{
		release();
		if (!bytes)
			return true;
		void *p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return false;
		data_ = static_cast<uint8_t *>(p);
		size_ = bytes;
		return true;
	}
	void release()
	{
		if (data_)
			munmap(data_, size_);
		data_ = nullptr;
		size_ = 0;
	}
	uint8_t *data() const { return data_; }
	size_t size() const { return size_; }

private:
	uint8_t *data_ = nullptr;
	size_t size_ = 0;
};

// Allocator for rxm's big per-endpoint tables (operation slots, receives): mapped like Slab
// for the same reason (heap blocks of a MiB shift malloc's mmap threshold and stay behind).
template <class T>
struct PageAllocator {
	using value_type = T;
	PageAllocator() = default;
	template <class U>
	PageAllocator(const PageAllocator<U> &) noexcept
	{
	}
	T *allocate(size_t n)
	{
		void *p = mmap(nullptr, n * sizeof(T), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			throw std::bad_alloc();
		return static_cast<T *>(p);
	}
	void deallocate(T *p, size_t n) noexcept { munmap(p, n * sizeof(T)); }
	template <class U>
	bool operator==(const PageAllocator<U> &) const noexcept
	{
		return true;
	}
};

} // namespace rxm

#endif
