// util::WaitSet: fi_wait_open / fi_wait. CQs, EQs and counters opened with FI_WAIT_SET
// join the set; fi_wait progresses every member and blocks on one epoll set containing the
// members' wait fds until one has something to read (or the timeout passes:
// -FI_ETIMEDOUT). FI_GETWAIT returns that epoll fd (FI_WAIT_FD / FI_WAIT_UNSPEC sets).
#ifndef OFI_PROV_UTIL_WAIT_SET_H
#define OFI_PROV_UTIL_WAIT_SET_H

#include "prov/util/fabric.h"
#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_eq.h>

#include <mutex>
#include <vector>

namespace util {

class Waitable;

class WaitSet : public FidStorage<fid_wait>, public FidObject {
public:
	WaitSet(Fabric &fabric, const struct fi_wait_attr *attr);
	~WaitSet() override;

	struct fid_wait *wait_fid() noexcept { return &embedded_fid.pub; }

	// Called by CQ/EQ/counter constructors and close().
	int add(Waitable *member);
	void remove(Waitable *member);

	// ---- fi_ops_wait ----
	int wait(int timeout);

	// ---- fi_ops ----
	int control(int command, void *arg);
	int close() override;

private:
	Fabric &fabric_;
	int epoll_fd_ = -1;
	std::mutex mutex_;
	std::vector<Waitable *> members_;
};

} // namespace util

#endif
