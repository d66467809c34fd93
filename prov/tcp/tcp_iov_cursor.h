// A position inside a short list of buffers, used to stream a message to or from the socket
// in pieces (partial sends and receives) without copying it.
#ifndef PROV_TCP_TCP_IOV_CURSOR_H
#define PROV_TCP_TCP_IOV_CURSOR_H

#include <sys/uio.h>

#include <cstddef>
#include <cstdint>

namespace tcp {

class IovCursor {
public:
	static constexpr size_t kMaxSegments = 5;   // a header plus kIovLimit user buffers

	void clear() { count_ = index_ = 0; remaining_ = 0; }

	// Appends a buffer; zero-length buffers are skipped. Returns false when full.
	bool append(void *base, size_t len)
	{
		if (len == 0)
			return true;
		if (count_ == kMaxSegments)
			return false;
		iov_[count_].iov_base = base;
		iov_[count_].iov_len = len;
		count_++;
		remaining_ += len;
		return true;
	}

	// Keeps only the first `limit` bytes (for receives into a smaller buffer).
	void truncate(size_t limit)
	{
		size_t kept = 0;
		for (size_t i = index_; i < count_; i++) {
			if (kept + iov_[i].iov_len >= limit) {
				iov_[i].iov_len = limit - kept;
				count_ = iov_[i].iov_len ? i + 1 : i;
				remaining_ = limit;
				return;
			}
			kept += iov_[i].iov_len;
		}
	}

	size_t remaining() const { return remaining_; }
	bool done() const { return remaining_ == 0; }
	const iovec *current() const { return iov_ + index_; }
	int current_count() const { return static_cast<int>(count_ - index_); }

	// Copies up to len bytes from src into the buffers and advances past them; returns
	// the number copied.
	size_t fill(const uint8_t *src, size_t len)
	{
		size_t copied = 0;
		while (len > 0 && index_ < count_) {
			size_t step = len < iov_[index_].iov_len ? len : iov_[index_].iov_len;
			__builtin_memcpy(iov_[index_].iov_base, src, step);
			src += step;
			len -= step;
			copied += step;
			advance(step);
		}
		return copied;
	}

	void advance(size_t bytes)
	{
		remaining_ -= bytes;
		while (bytes > 0 && index_ < count_) {
			size_t step = bytes < iov_[index_].iov_len ? bytes : iov_[index_].iov_len;
			iov_[index_].iov_base = static_cast<uint8_t *>(iov_[index_].iov_base) + step;
			iov_[index_].iov_len -= step;
			bytes -= step;
			if (iov_[index_].iov_len == 0)
				index_++;
		}
	}

private:
	iovec iov_[kMaxSegments]{};
	size_t count_ = 0;
	size_t index_ = 0;
	size_t remaining_ = 0;
};

} // namespace tcp

#endif
