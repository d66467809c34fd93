#include "prov/util/buffer_pool.h"

#include <cstdlib>

namespace util {

BufferPool::BufferPool(std::size_t buffer_size, std::size_t capacity, std::size_t grow_chunk,
		       std::size_t alignment)
    : alignment_(alignment ? alignment : 1), grow_chunk_(grow_chunk)
{
	std::size_t size = buffer_size ? buffer_size : 1;
	stride_ = (size + alignment_ - 1) & ~(alignment_ - 1);
	if (capacity && !grow(capacity))
		throw std::bad_alloc();
}

BufferPool::~BufferPool()
{
	for (Chunk &chunk : chunks_)
		std::free(chunk.memory);
}

bool BufferPool::grow(std::size_t count) noexcept
{
	try {
		std::size_t bytes = stride_ * count;
		auto *memory = static_cast<std::byte *>(std::aligned_alloc(alignment_, bytes));
		if (!memory)
			return false;
		// Reserve bookkeeping first so that a failure leaves the pool unchanged.
		try {
			chunks_.reserve(chunks_.size() + 1);
			free_list_.reserve(total_ + count);
			in_use_.reserve(total_ + count);
		} catch (...) {
			std::free(memory);
			return false;
		}
		chunks_.push_back({memory, total_, count});
		for (std::size_t i = 0; i < count; ++i)
			in_use_.push_back(false);
		// Push in reverse so the lowest index is handed out first.
		for (std::size_t i = count; i > 0; --i)
			free_list_.push_back(total_ + i - 1);
		total_ += count;
		free_count_ += count;
		return true;
	} catch (...) {
		return false;
	}
}

void *BufferPool::get() noexcept
{
	if (free_list_.empty()) {
		if (!grow_chunk_ || !grow(grow_chunk_))
			return nullptr;
	}
	std::size_t index = free_list_.back();
	free_list_.pop_back();
	--free_count_;
	in_use_[index] = true;
	return at(index);
}

bool BufferPool::put(void *buffer) noexcept
{
	std::size_t index = index_of(buffer);
	if (index == kInvalidIndex || !in_use_[index])
		return false;
	in_use_[index] = false;
	free_list_.push_back(index);  // capacity reserved in grow(): never allocates
	++free_count_;
	return true;
}

std::size_t BufferPool::index_of(const void *buffer) const noexcept
{
	auto *p = static_cast<const std::byte *>(buffer);
	for (const Chunk &chunk : chunks_) {
		const std::byte *end = chunk.memory + chunk.count * stride_;
		if (p >= chunk.memory && p < end) {
			std::size_t offset = static_cast<std::size_t>(p - chunk.memory);
			if (offset % stride_)
				return kInvalidIndex;
			return chunk.first_index + offset / stride_;
		}
	}
	return kInvalidIndex;
}

void *BufferPool::at(std::size_t index) const noexcept
{
	for (const Chunk &chunk : chunks_) {
		if (index >= chunk.first_index && index < chunk.first_index + chunk.count)
			return chunk.memory + (index - chunk.first_index) * stride_;
	}
	return nullptr;
}

bool BufferPool::owns(const void *buffer) const noexcept
{
	return index_of(buffer) != kInvalidIndex;
}

} // namespace util
