// Pools of fixed-size buffers with a free list (DESIGN rule 3: no allocation on the data
// path). Capacity is set at open; when a grow chunk is given, the pool grows by that many
// buffers only once it is exhausted, and never shrinks, so pointers and indices stay valid
// for the pool's lifetime. Every buffer has a stable index (0 .. total()-1), useful to carry
// a request id on the wire and turn it back into a pointer. Not thread-safe: the owner locks.
#ifndef OFI_PROV_UTIL_BUFFER_POOL_H
#define OFI_PROV_UTIL_BUFFER_POOL_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace util {

class BufferPool {
public:
	// 'buffer_size' bytes per buffer (rounded up to 'alignment', a power of two);
	// 'capacity' buffers allocated now; 'grow_chunk' = 0 means fixed size.
	BufferPool(std::size_t buffer_size, std::size_t capacity, std::size_t grow_chunk = 0,
		   std::size_t alignment = 64);
	~BufferPool();
	BufferPool(const BufferPool &) = delete;
	BufferPool &operator=(const BufferPool &) = delete;

	// A free buffer, or nullptr when exhausted and not allowed (or unable) to grow.
	void *get() noexcept;
	// Returns a buffer obtained from get(); foreign pointers are ignored (returns false).
	bool put(void *buffer) noexcept;

	// Index <-> pointer; at() returns nullptr for an index out of range.
	std::size_t index_of(const void *buffer) const noexcept;
	void *at(std::size_t index) const noexcept;
	// True when 'buffer' is the start of one of our buffers.
	bool owns(const void *buffer) const noexcept;

	std::size_t buffer_size() const noexcept { return stride_; }
	std::size_t total() const noexcept { return total_; }
	std::size_t available() const noexcept { return free_count_; }
	std::size_t in_use() const noexcept { return total_ - free_count_; }
	static constexpr std::size_t kInvalidIndex = SIZE_MAX;

private:
	bool grow(std::size_t count) noexcept;

	struct Chunk {
		std::byte *memory;
		std::size_t first_index;
		std::size_t count;
	};

	std::size_t stride_;
	std::size_t alignment_;
	std::size_t grow_chunk_;
	std::vector<Chunk> chunks_;
	std::vector<std::size_t> free_list_;  // indices; reserved so pushes never allocate
	std::vector<bool> in_use_;
	std::size_t free_count_ = 0;
	std::size_t total_ = 0;
};

// Typed pool on top of BufferPool: get() constructs a T, put() destroys it.
template <class T>
class ObjectPool {
public:
	explicit ObjectPool(std::size_t capacity, std::size_t grow_chunk = 0)
	    : pool_(sizeof(T), capacity, grow_chunk, alignof(T) > 64 ? alignof(T) : 64)
	{
	}

	template <class... Args>
	T *get(Args &&...args)
	{
		void *memory = pool_.get();
		if (!memory)
			return nullptr;
		return new (memory) T(std::forward<Args>(args)...);
	}

	void put(T *object) noexcept
	{
		if (!object || !pool_.owns(object))
			return;
		object->~T();
		pool_.put(object);
	}

	std::size_t index_of(const T *object) const noexcept { return pool_.index_of(object); }
	// Only meaningful for an index of an object currently handed out.
	T *at(std::size_t index) const noexcept { return static_cast<T *>(pool_.at(index)); }
	std::size_t available() const noexcept { return pool_.available(); }
	std::size_t in_use() const noexcept { return pool_.in_use(); }
	std::size_t total() const noexcept { return pool_.total(); }

private:
	BufferPool pool_;
};

} // namespace util

#endif
