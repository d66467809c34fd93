// A passive endpoint: an rdma_cm id listening for connection requests, which it reports
// as FI_CONNREQ events carrying an fi_info whose handle is a VerbsConnRequest.
#ifndef OFI_PROV_VERBS_PEP_H
#define OFI_PROV_VERBS_PEP_H

#include <netinet/in.h>

#include <rdma/fi_cm.h>
#include <rdma/fi_endpoint.h>
#include <rdma/rdma_cma.h>

#include "prov/verbs/verbs_eq.h"
#include "prov/util/fid_object.h"

namespace verbs {

class VerbsFabric;

// A connection request not yet accepted or rejected; owns the new CM id until an
// endpoint takes it (fi_endpoint with info->handle) or fi_reject destroys it.
// Its fid has no ops (as tcp's): the application only hands it back in info->handle.
class VerbsConnRequest : public util::FidStorage<struct fid>, public util::FidObject,
			 public CmEventTarget {
public:
	VerbsConnRequest(struct rdma_cm_id *id, uint8_t responder_resources, uint8_t initiator_depth);
	struct fid *handle() { return fid(); }

	// Hands the CM id to the caller and frees the request.
	struct rdma_cm_id *take_id();
	uint8_t responder_resources() const { return responder_resources_; }
	uint8_t initiator_depth() const { return initiator_depth_; }
	void reject(const void *param, size_t paramlen);
	// A request is the context of its id until taken; its events before that are ignored.
	void on_cm_event(const struct rdma_cm_event &, VerbsEventQueue &) override {}

private:
	struct rdma_cm_id *id_;
	uint8_t responder_resources_;
	uint8_t initiator_depth_;
};

class VerbsPassiveEndpoint : public util::FidStorage<fid_pep>, public util::FidObject,
			     public CmEventTarget {
public:
	static int open(VerbsFabric *fabric, struct fi_info *info, struct fid_pep **pep,
			void *context);

	int close() override;
	int bind(struct fid *bfid, uint64_t flags);
	int control(int command, void *arg);
	int getopt(int level, int optname, void *optval, size_t *optlen);
	int setopt(int level, int optname, const void *optval, size_t optlen);
	int setname(void *addr, size_t addrlen);
	int getname(void *addr, size_t *addrlen);
	int listen();
	int reject(struct fid *handle, const void *param, size_t paramlen);

	void on_cm_event(const struct rdma_cm_event &event, VerbsEventQueue &eq) override;

private:
	VerbsPassiveEndpoint(VerbsFabric *fabric, void *context);
	~VerbsPassiveEndpoint() override;
	struct fi_info *connreq_info(struct rdma_cm_id *id, VerbsConnRequest *request);

	VerbsFabric *fabric_;
	struct fi_info *info_ = nullptr;
	VerbsEventQueue *eq_ = nullptr;
	struct rdma_cm_id *id_ = nullptr;
	struct sockaddr_in name_ {};
};

// Copies an IPv4/IPv6 socket address out the way fi_getname/fi_getpeer specify.
int copy_out_address(const struct sockaddr *sa, void *addr, size_t *addrlen);

} // namespace verbs

#endif
