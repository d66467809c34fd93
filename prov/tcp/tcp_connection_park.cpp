// Connection: parking a message stalled on a shared receive (issue 15, finding 3).
//
// Streams bound to a shared receive context take a receive when a message header arrives
// and keep it until the payload is in. A peer that sends a header and stops would keep it
// for ever, and a handful of such peers would hold every receive of the context (ofi_rxm
// posts only 4): nobody else's message would be read again. So when a message finds the
// shared queue empty, a stream holding a receive with nothing readable on its socket is
// parked: the bytes it placed so far move to an allocation of exactly their size (at most
// one message, one per stream) and its receive goes back to the front of the queue. The
// parked stream takes a receive again only when its socket has data (not on every post,
// which would hand the receive straight back to the staller), copies its bytes back and
// reads on; its completions keep their order since it reads nothing else meanwhile.
//
// Nothing here runs while receives are free: a message streaming normally is never copied.
// Parking needs no timeout: a stream with data is never parked, so whoever holds a
// receive either makes progress or can be parked by the next message that needs it.
#include "prov/tcp/tcp_connection.h"

#include "prov/tcp/tcp_provider.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

namespace tcp {

namespace {

// True when the socket has nothing to read now (EOF and errors count: no more data will
// come to fill the receive, and the stream notices on its next read).
bool nothing_readable(int fd)
{
	char byte;
	ssize_t n = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
	return n == 0 || (n < 0 && errno != EINTR);
}

} // namespace

bool Connection::stalled_on_shared_receive() const
{
	// stage_ is set only while this stream's own progress call runs (it may be the one
	// whose callback led here); bytes kept in the stage would be processed first.
	return rx_state_ == RxState::payload && target_ == RxTarget::message && matched_taken_ &&
	       matched_ && !stage_ && stage_len_ == 0 && active() && nothing_readable(fd_);
}

bool Connection::park_shared_receive()
{
	size_t have = static_cast<size_t>(placed_ - into_.remaining());
	std::unique_ptr<uint8_t[]> bytes;
	if (have) {
		bytes.reset(new (std::nothrow) uint8_t[have]);
		if (!bytes)
			return false;
		// Shared receives are never multi-receive: their bytes start at the first iov.
		size_t copied = 0;
		for (size_t i = 0; i < matched_->iov_count && copied < have; i++) {
			size_t step = std::min(have - copied, matched_->iov[i].iov_len);
			memcpy(bytes.get() + copied, matched_->iov[i].iov_base, step);
			copied += step;
		}
	}
	parked_got_ = message_size_ - into_.remaining() - discard_left_;
	parked_ = std::move(bytes);
	parked_len_ = have;
	rxq_->push_front(matched_);
	matched_ = nullptr;
	matched_taken_ = false;
	matched_buf_ = nullptr;
	into_.clear();
	rx_state_ = RxState::parked;
	FI_DBG(&provider, FI_LOG_EP_DATA, "parked a stalled message (%zu bytes so far)\n", have);
	return true;
}

bool Connection::reclaim_shared_receive()
{
	bool freed = false;
	rxq_->for_each_slot([this, &freed](RxEntry *r) {
		if (freed || !r->holder || r->holder == this)
			return;
		Connection *holder = r->holder;
		if (holder->stalled_on_shared_receive())
			freed = holder->park_shared_receive();
	});
	return freed;
}

bool Connection::resume_parked()
{
	// Only with data in hand: taking a receive back just to wait again would hand it
	// to the staller on every post.
	if (!staged()) {
		char byte;
		ssize_t n = recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
		if (!socket_result(n, 1))
			return false; // still stalled (EPOLLIN stays armed), or the stream ended
	}
	RxEntry *r = rxq_->head();
	if (!r && reclaim_shared_receive())
		r = rxq_->head();
	if (!r) {
		rx_state_ = RxState::parked_waiting;
		owner_.rx_starved();
		return false;
	}
	std::unique_ptr<uint8_t[]> bytes = std::move(parked_);
	size_t len = parked_len_;
	uint64_t got = parked_got_;
	parked_len_ = 0;
	parked_got_ = 0;
	uint64_t size = message_size_;
	offer_to_placer(r, false); // the placer only hears which receive it takes
	fill_from_receive(r, size);
	// Had it begun dropping bytes (its first receive was full), the new receive holds
	// just what the first did: the completion reports the same truncation.
	if (got > len && placed_ > len) {
		into_.truncate(len);
		placed_ = len;
	}
	size_t copied = into_.fill(bytes.get(), std::min<uint64_t>(len, placed_));
	(void)copied;
	discard_left_ = size - std::max<uint64_t>(got, placed_);
	if (into_.done() && discard_left_ == 0)
		finish_payload();
	return true;
}

} // namespace tcp
