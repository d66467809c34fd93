// util::PollSet: fi_poll_open / fi_poll_add / fi_poll_del / fi_poll. fi_poll progresses the
// members' domains and returns the contexts of CQs that have completions and of counters
// whose value changed since they were last observed.
#ifndef OFI_PROV_UTIL_POLL_SET_H
#define OFI_PROV_UTIL_POLL_SET_H

#include "prov/util/domain.h"
#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_eq.h>

#include <mutex>
#include <vector>

namespace util {

class PollSet : public FidStorage<fid_poll>, public FidObject {
public:
	PollSet(Domain &domain, const struct fi_poll_attr *attr);
	~PollSet() override;

	struct fid_poll *poll_fid() noexcept { return &embedded_fid.pub; }

	// ---- fi_ops_poll ----
	int poll(void **context, int count);
	int poll_add(struct fid *event_fid, uint64_t flags);
	int poll_del(struct fid *event_fid, uint64_t flags);

	// ---- fi_ops ----
	int close() override;

private:
	Domain &domain_;
	std::mutex mutex_;
	std::vector<FidObject *> members_;  // CompletionQueue or Counter, each referenced
};

} // namespace util

#endif
