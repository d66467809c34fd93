// FI_MULTI_RECV slicing: one large posted buffer receives many messages back to back. Each
// message takes the next free bytes; once fewer than min_free bytes remain the buffer is
// retired, and it is released (the completion carrying FI_MULTI_RECV) when the last message
// that still writes into it has finished.
#ifndef OFI_PROV_RXM_MULTI_RECV_H
#define OFI_PROV_RXM_MULTI_RECV_H

#include <cstddef>
#include <cstdint>

namespace rxm {

class MultiRecvBuffer {
public:
	MultiRecvBuffer() = default;
	MultiRecvBuffer(uint8_t *base, size_t len, size_t min_free)
		: base_(base), len_(len), min_free_(min_free) {}

	struct Slice {
		uint8_t *data;
		size_t len;
	};

	// Reserves room for a message of msg_len bytes (truncated to what is left). The buffer
	// retires when the remaining space falls below min_free.
	Slice take(size_t msg_len)
	{
		size_t left = len_ - used_;
		size_t n = msg_len < left ? msg_len : left;
		Slice s{base_ + used_, n};
		used_ += n;
		in_flight_++;
		if (len_ - used_ < min_free_ || len_ == used_)
			retired_ = true;
		return s;
	}

	// A message placed by take() is complete. Returns true when this was the last one of a
	// retired buffer: that completion reports FI_MULTI_RECV.
	bool finish()
	{
		in_flight_--;
		return retired_ && in_flight_ == 0;
	}

	// Retired buffers take no new messages (the matcher must unlink them).
	bool retired() const { return retired_; }
	size_t remaining() const { return len_ - used_; }
	size_t in_flight() const { return in_flight_; }
	// fi_cancel of a buffer nothing writes into releases it at once.
	void retire() { retired_ = true; }

private:
	uint8_t *base_ = nullptr;
	size_t len_ = 0;
	size_t min_free_ = 0;
	size_t used_ = 0;
	size_t in_flight_ = 0;
	bool retired_ = false;
};

} // namespace rxm

#endif
