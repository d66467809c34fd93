// LazyPool: a fixed-capacity pool whose storage is reserved when the endpoint opens but whose
// slots are constructed (and their pages touched) only when first handed out. The storage is
// an anonymous mapping of its own, not heap memory: malloc would write chunk headers into it
// and reuse already-resident pages. A connection sized for 256 sends and 512 responses thus
// costs resident memory only for the few slots it uses, which keeps thousands of mostly
// idle connections cheap. Free slots are chained through their `next` member (the queue link
// they do not need while free).
#ifndef PROV_TCP_TCP_LAZY_POOL_H
#define PROV_TCP_TCP_LAZY_POOL_H

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

namespace tcp {

// Untouched, zero-on-first-use memory for `bytes` (at least one page); throws std::bad_alloc.
inline void *reserve_pages(size_t bytes)
{
	void *p = mmap(nullptr, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		throw std::bad_alloc();
	return p;
}

inline void release_pages(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes ? bytes : 1);
}

// Bytes of memory from reserve_pages, for buffers like inject copies.
class LazyBytes {
public:
	explicit LazyBytes(size_t bytes)
	    : bytes_(bytes), data_(static_cast<uint8_t *>(reserve_pages(bytes)))
	{
	}
	~LazyBytes() { release_pages(data_, bytes_); }
	LazyBytes(const LazyBytes &) = delete;
	LazyBytes &operator=(const LazyBytes &) = delete;
	uint8_t *data() const { return data_; }

private:
	size_t bytes_;
	uint8_t *data_;
};

template <class T>
class LazyPool {
	static_assert(std::is_trivially_destructible_v<T>, "slots are reused without destruction");

public:
	explicit LazyPool(size_t capacity)
	    : capacity_(capacity), slots_(static_cast<T *>(reserve_pages(capacity * sizeof(T))))
	{
	}
	~LazyPool() { release_pages(slots_, capacity_ * sizeof(T)); }
	LazyPool(const LazyPool &) = delete;
	LazyPool &operator=(const LazyPool &) = delete;

	// A free slot (reused first, then a fresh one), or nullptr when all are out.
	T *get()
	{
		if (free_) {
			T *slot = free_;
			free_ = slot->next;
			free_count_--;
			return new (slot) T();
		}
		if (made_ == capacity_)
			return nullptr;
		return new (slots_ + made_++) T();
	}
	// As get(), but a reused slot comes back as put() left it, for a caller that resets
	// only the members its next use reads (a whole new T per operation costs more).
	T *get_as_left()
	{
		if (free_) {
			T *slot = free_;
			free_ = slot->next;
			free_count_--;
			return slot;
		}
		if (made_ == capacity_)
			return nullptr;
		return new (slots_ + made_++) T();
	}
	void put(T *t)
	{
		t->next = free_;
		free_ = t;
		free_count_++;
	}

	size_t capacity() const { return capacity_; }
	size_t available() const { return free_count_ + (capacity_ - made_); }
	// Slots ever handed out are [0, made()); index() and at() map between them and numbers.
	// A slot at() returns may be free: callers keep their own in-use mark.
	size_t made() const { return made_; }
	size_t index(const T *t) const { return static_cast<size_t>(t - slots_); }
	T *at(size_t i) { return i < made_ ? slots_ + i : nullptr; }

private:
	size_t capacity_;
	T *slots_;
	size_t made_ = 0;
	T *free_ = nullptr;
	size_t free_count_ = 0;
};

} // namespace tcp

#endif
