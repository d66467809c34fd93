// CoreWaitFds: a core object's wait sources, or its FI_GETWAIT fd from a foreign core.
#include "prov/rxm/rxm_core_wait.h"

#include <rdma/fi_eq.h>

#include "prov/util/sleep_report.h"

namespace rxm {

bool CoreWaitFds::fetch(struct fid *core)
{
	count_ = 0;
	core_ = core;
	whole_fd_ = false;
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
		whole_fd_ = true;
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

void CoreWaitFds::forget_sleep() const noexcept
{
	if (whole_fd_ && count_ == 1)
		util::sleep_report::take(fds_[0]);
}

bool CoreWaitFds::seen_quiet() const noexcept
{
	return whole_fd_ && count_ == 1 &&
	       util::sleep_report::peek(fds_[0]) == util::sleep_report::quiet;
}

void CoreWaitFds::remove_from(util::Waitable &w) const
{
	for (size_t i = 0; i < count_; ++i)
		w.remove_polled_fd(fds_[i]);
}

} // namespace rxm
