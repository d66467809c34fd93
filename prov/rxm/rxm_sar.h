// Reassembly of segmented (SAR) messages. A core MSG connection delivers in order and a sender
// finishes one segmented message before starting the next on the same connection, so segments
// must arrive with consecutive offsets; anything else is a protocol error. Data beyond the
// destination's capacity is counted but dropped, which yields FI_ETRUNC at the end.
#ifndef OFI_PROV_RXM_SAR_H
#define OFI_PROV_RXM_SAR_H

#include "prov/rxm/rxm_wire.h"

#include <cstddef>
#include <cstdint>
#include <span>

namespace rxm {

class SarReassembly {
public:
	// Starts a message described by its first segment's header.
	void begin(const WireHeader &first)
	{
		msg_id_ = first.msg_id;
		total_len_ = first.total_len;
		received_ = 0;
		active_ = true;
	}

	bool active() const { return active_; }
	uint64_t msg_id() const { return msg_id_; }
	uint64_t total_len() const { return total_len_; }
	uint64_t received() const { return received_; }

	enum class Result { more, complete, protocol_error };

	// Checks that the segment continues the current message, then hands its bytes to place
	// (called as place(offset, bytes)). Returns complete after the last segment.
	template <typename Place>
	Result accept(const WireHeader &seg, std::span<const uint8_t> payload, Place &&place)
	{
		if (!active_ || seg.op != WireOp::sar_segment || seg.msg_id != msg_id_ ||
		    seg.total_len != total_len_ || seg.offset != received_ ||
		    payload.size() != seg.payload_len)
			return Result::protocol_error;
		place(seg.offset, payload);
		received_ += payload.size();
		if (!(seg.flags & wire_flag::last_segment))
			return Result::more;
		active_ = false; // decode_message already checked offset + len == total_len
		return Result::complete;
	}

private:
	uint64_t msg_id_ = 0;
	uint64_t total_len_ = 0;
	uint64_t received_ = 0;
	bool active_ = false;
};

} // namespace rxm

#endif
