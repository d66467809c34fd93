// CoreWaitFds: the fds a blocked reader of an rxm CQ or counter watches for one core object
// (the core CQ or EQ of an endpoint).
//
// From a core of ours these are the core object's own wait sources (its eventfd and its
// progress engine's epoll fd, util::kGetWaitSources) rather than its FI_GETWAIT epoll fd:
// nesting that fd inside the rxm object's set put sockets 4 epoll levels below the fd the
// application gets, leaving it 1 of the 5 levels Linux allows (issue 17 item 4); watching
// the sources directly leaves 3, as the core alone does. A foreign core gives its FI_GETWAIT
// fd. Either way rxm calls fi_trywait on the core before every sleep (RxmEndpoint::
// core_may_sleep, core_trywait), which is what the sources' holder promises.
#ifndef OFI_PROV_RXM_CORE_WAIT_H
#define OFI_PROV_RXM_CORE_WAIT_H

#include "prov/util/waitable.h"

#include <rdma/fabric.h>

namespace rxm {

class CoreWaitFds {
public:
	// False when the core object offers no fd at all (it is then polled: fd-less source).
	bool fetch(struct fid *core);
	bool has_fds() const noexcept { return count_ > 0; }
	size_t count() const noexcept { return count_; }
	void clear() noexcept
	{
		count_ = 0;
		core_ = nullptr;
		whole_fd_ = false;
	}
	// As polled fds of 'w' (util::Waitable::add_polled_fd), each once per call.
	void add_to(util::Waitable &w) const;
	void remove_from(util::Waitable &w) const;
	// FI_GETWAIT on the core object: for when the application took the rxm object's fd and
	// may poll it without fi_trywait. A core of ours then keeps its engine's sources armed
	// after every pass until a first fi_trywait (util::ProgressEngine::keep_armed): shm's
	// rings ask the peer for a doorbell only when armed, so without this a message over shm
	// would not make the application's fd readable.
	void hand_out() const;
	// What the last sleeper saw of a whole FI_GETWAIT fd (util/sleep_report.h): that fd is
	// readable whenever a read of the core object would make progress, so a sleep that
	// woke with it quiet woke for something else. forget_sleep() before a sleep (so that
	// only its own report counts); seen_quiet() after: true only when that sleep reported
	// the fd not readable. Wait sources (a core of ours) are parts of the object's wait
	// (another object's engine may feed it): never reported quiet here.
	void forget_sleep() const noexcept;
	bool seen_quiet() const noexcept;

private:
	struct fid *core_ = nullptr;
	int fds_[util::WaitSources::kMax] = {};
	size_t count_ = 0;
	bool whole_fd_ = false; // fds_[0] is the object's FI_GETWAIT fd
};

} // namespace rxm

#endif
