// SendFlush: the endpoints of one domain holding sends back for the next progress pass.
//
// A burst of sends posted back to back (a window of 64, say) would cost one sendmsg each if
// every post went to the socket at once; on loopback each such call also runs the peer's
// TCP input path. So a send posted after another in the same pass only queues (manual
// progress allows it: fi_domain(3)), and the next pass sends the whole queue in one sendmsg.
// While something is held back this object is a source of the domain's progress engine:
// every pass flushes (fi_cq_read, fi_cq_sread, fi_cntr_read...), and before_sleep() flushes
// too, so neither a blocking read nor fi_trywait sleeps on sends nobody will make. With
// nothing held back it is not registered, so an idle domain costs nothing (util's fabric
// passes over a domain with sources on every EQ read).
// Everything runs under the domain (engine) lock.
#ifndef PROV_TCP_TCP_SEND_FLUSH_H
#define PROV_TCP_TCP_SEND_FLUSH_H

#include "prov/tcp/tcp_member_list.h"
#include "prov/util/progress_engine.h"

namespace tcp {

class SendFlush : public util::ProgressSource {
public:
	class Member : public MemberLinks<Member> {
	public:
		// Sends what it holds back (whatever the socket takes; the rest waits for
		// EPOLLOUT like any blocked send).
		virtual void flush_sends() = 0;

	protected:
		~Member() = default;
	};

	explicit SendFlush(util::ProgressEngine &engine) : engine_(engine) {}
	~SendFlush() override
	{
		if (registered_)
			engine_.remove_source(this);
	}
	SendFlush(const SendFlush &) = delete;
	SendFlush &operator=(const SendFlush &) = delete;

	// False when the engine cannot take the source (no memory): send at once instead.
	bool add(Member *m)
	{
		if (!registered_) {
			try {
				registered_ = engine_.add_source(this) == 0;
			} catch (...) {
				return false;
			}
			if (!registered_)
				return false;
		}
		members_.push_front(m);
		return true;
	}

	void remove(Member *m) { members_.remove(m); }

	void progress() override { flush_all(); }
	// Flushing may complete sends: the caller then reads instead of sleeping.
	bool before_sleep() override { return !flush_all(); }

private:
	// True if any endpoint was flushed.
	bool flush_all()
	{
		bool any = members_.front() != nullptr;
		while (Member *m = members_.front()) {
			remove(m);
			m->flush_sends();
		}
		if (registered_) {
			engine_.remove_source(this);
			registered_ = false;
		}
		return any;
	}

	util::ProgressEngine &engine_;
	MemberList<Member> members_;
	bool registered_ = false;
};

} // namespace tcp

#endif
