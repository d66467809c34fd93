// A shared receive context (fi_srx_context): one ibv SRQ whose receives any endpoint bound
// to it consumes, so receive memory does not grow with the number of connections.
#ifndef OFI_PROV_VERBS_SRX_H
#define OFI_PROV_VERBS_SRX_H

#include <atomic>

#include <infiniband/verbs.h>
#include <rdma/fi_endpoint.h>

#include "prov/verbs/verbs_request.h"
#include "prov/util/fid_object.h"

namespace verbs {

class VerbsDomain;

// Endpoints whose QP takes its receives from srq() hold a reference (util::FidObject::ref):
// the SRQ cannot go away under them. Entries it does not define (sends, RMA, CM, tagged...)
// return -FI_ENOSYS.
class VerbsSharedRx final : public util::FidStorage<fid_ep>, public util::FidObject,
			    public RequestOwner {
public:
	static int open(VerbsDomain *domain, struct fi_rx_attr *attr, struct fid_ep **srx,
			void *context);

	struct ibv_srq *srq() const { return srq_; }
	VerbsDomain *domain() const { return domain_; }

	bool closing() const override { return closing_.load(); }
	void release_request(VerbsRequest *request) override { pool_.release(request); }

	// fi_ops
	int close() override;
	// FI_ENABLE: nothing to switch on, the SRQ takes receives from the moment it exists.
	int control(int command, void *arg);
	// fi_ops_ep
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);
	ssize_t rx_size_left();
	// fi_ops_msg (receives only: sends go through the endpoints)
	ssize_t recv(void *buf, size_t len, void *desc, fi_addr_t src_addr, void *context);
	ssize_t recvv(const struct iovec *iov, void **desc, size_t count, fi_addr_t src_addr,
		      void *context);
	ssize_t recvmsg(const struct fi_msg *msg, uint64_t flags);

private:
	VerbsSharedRx(VerbsDomain *domain, size_t size, void *context);
	~VerbsSharedRx() override = default;
	ssize_t post(const struct iovec *iov, void **desc, size_t count, void *context,
		     uint64_t flags);

	VerbsDomain *domain_;
	struct ibv_srq *srq_ = nullptr;
	size_t iov_limit_ = 1;
	size_t max_msg_size_ = 1ULL << 31;
	uint64_t op_flags_ = 0;
	std::atomic<bool> closing_{false};
	RequestPool pool_;
};

} // namespace verbs

#endif
