// CoreWaitFds: a core object's wait sources, or its FI_GETWAIT fd from a foreign core.
#include "prov/rxm/rxm_core_wait.h"

#include <rdma/fi_eq.h>

namespace rxm {

bool CoreWaitFds::fetch(struct fid *core)
{
	count_ = 0;
	core_ = core;
	util::WaitSources sources;
	if (fi_control(core, util::kGetWaitSources, &sources) == 0 && sources.count > 0 &&
	    sources.count <= util::WaitSources::kMax) {
		for (size_t i = 0; i < sources.count; ++i)
			fds_[i] = sources.fds[i];
		count_ = sources.count;
		return true;
	}
	int fd = -1;
	if (fi_control(core, FI_GETWAIT, &fd) == 0 && fd >= 0) {
		fds_[0] = fd;
		count_ = 1;
	}
	return count_ > 0;
}

void CoreWaitFds::add_to(util::Waitable &w) const
{
	for (size_t i = 0; i < count_; ++i)
		w.add_polled_fd(fds_[i]);
}

void CoreWaitFds::hand_out() const
{
	int fd = -1;
	if (core_ && count_ > 0)
		fi_control(core_, FI_GETWAIT, &fd); // the fd itself is not ours to use
}

void CoreWaitFds::remove_from(util::Waitable &w) const
{
	for (size_t i = 0; i < count_; ++i)
		w.remove_polled_fd(fds_[i]);
}

} // namespace rxm
