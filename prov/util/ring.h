// Fixed-capacity FIFO ring. Storage is allocated once at construction; push/pop never
// allocate, so it is safe on the data path. Not thread-safe: the owner locks.
#ifndef OFI_PROV_UTIL_RING_H
#define OFI_PROV_UTIL_RING_H

#include <cstddef>
#include <memory>
#include <utility>

namespace util {

template <class T>
class Ring {
public:
	explicit Ring(std::size_t capacity)
	    : slots_(std::make_unique<T[]>(capacity ? capacity : 1)), capacity_(capacity ? capacity : 1)
	{
	}

	std::size_t capacity() const noexcept { return capacity_; }
	std::size_t size() const noexcept { return count_; }
	std::size_t space() const noexcept { return capacity_ - count_; }
	bool empty() const noexcept { return count_ == 0; }
	bool full() const noexcept { return count_ == capacity_; }

	// Returns false (and leaves the ring untouched) when full.
	bool push(T value) noexcept(std::is_nothrow_move_assignable_v<T>)
	{
		if (full())
			return false;
		slots_[index(count_)] = std::move(value);
		++count_;
		return true;
	}

	// The slot the next push fills, for writing an element in place (no temporary, no
	// move); nullptr when full. It becomes the newest element with commit_back().
	T *back_slot() noexcept { return full() ? nullptr : &slots_[index(count_)]; }
	void commit_back() noexcept { ++count_; }

	// Oldest element; only valid when !empty().
	T &front() noexcept { return slots_[head_]; }
	const T &front() const noexcept { return slots_[head_]; }

	// The i-th element from the front (i < size()).
	T &at(std::size_t i) noexcept { return slots_[index(i)]; }

	// Drops the oldest element; only valid when !empty().
	void pop() noexcept
	{
		head_ = index(1);
		--count_;
	}

	// Moves the oldest element out; returns false when empty.
	bool pop(T &out) noexcept(std::is_nothrow_move_assignable_v<T>)
	{
		if (empty())
			return false;
		out = std::move(front());
		pop();
		return true;
	}

private:
	// The slot i places after the front (i <= capacity_). head_ < capacity_, so one
	// subtraction wraps it: a % here was a hardware divide on every push and pop of a CQ.
	std::size_t index(std::size_t i) const noexcept
	{
		std::size_t at = head_ + i;
		return at >= capacity_ ? at - capacity_ : at;
	}

	std::unique_ptr<T[]> slots_;
	std::size_t capacity_;
	std::size_t head_ = 0;
	std::size_t count_ = 0;
};

} // namespace util

#endif
