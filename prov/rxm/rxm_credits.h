// Credit-based flow control for cores whose receivers drop or fail messages without a posted
// buffer (verbs RC). Each credit is one receive buffer the peer has posted for us. The last
// credit is reserved for credit updates, so two peers that both ran out of data credits can
// still tell each other about freed buffers instead of deadlocking.
#ifndef OFI_PROV_RXM_CREDITS_H
#define OFI_PROV_RXM_CREDITS_H

#include <cstdint>

namespace rxm {

// Sender side: credits granted by the peer.
class SendCredits {
public:
	// initial == 0 means the peer does not use flow control: sending is never limited.
	explicit SendCredits(uint32_t initial = 0) : enabled_(initial != 0), available_(initial) {}

	bool enabled() const { return enabled_; }
	uint32_t available() const { return available_; }

	bool take_for_data()
	{
		if (!enabled_)
			return true;
		if (available_ <= 1)
			return false;
		available_--;
		return true;
	}

	bool take_for_credit_update()
	{
		if (!enabled_)
			return true;
		if (available_ == 0)
			return false;
		available_--;
		return true;
	}

	void grant(uint32_t n) { available_ += n; }

private:
	bool enabled_;
	uint32_t available_;
};

// Receiver side: buffers consumed and reposted since the last update we sent. They go back
// in the header of any message we send the peer (piggybacked), and in a message of their own
// (a credit update) only once a batch of them waited for none.
class CreditReturn {
public:
	// An update is worth a message once batch buffers have been freed.
	explicit CreditReturn(uint32_t batch = 1) : batch_(batch ? batch : 1) {}
	// The batch is known once the connection is up; buffers counted before are kept.
	void set_batch(uint32_t batch) { batch_ = batch ? batch : 1; }

	void buffer_reposted() { pending_++; }
	bool update_due() const { return pending_ >= batch_; }
	uint32_t pending() const { return pending_; }
	// Called when an update carrying pending() credits was handed to the core.
	uint32_t take_pending()
	{
		uint32_t n = pending_;
		pending_ = 0;
		return n;
	}
	// What a message going to the peer anyway can carry back (its header has 16 bits)...
	uint16_t to_piggyback() const { return pending_ > UINT16_MAX ? UINT16_MAX : pending_; }
	// ... and, once that message was handed to the core, no longer pending.
	void piggybacked(uint16_t n) { pending_ -= n <= pending_ ? n : pending_; }

private:
	uint32_t batch_;
	uint32_t pending_ = 0;
};

} // namespace rxm

#endif
