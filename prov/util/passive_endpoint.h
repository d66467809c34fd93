// util::PassiveEndpoint: base of a provider's listening endpoint (fid_pep).
//
// Handles fi_pep_bind to an EQ (required before listen), reference counting and close.
// The derived class adds listen(), getname(), setname(), reject() (and getopt/setopt if
// needed), registers its listening fd in fabric().engine() so EQ reads accept connections,
// and calls install_ops<Self>().
#ifndef OFI_PROV_UTIL_PASSIVE_ENDPOINT_H
#define OFI_PROV_UTIL_PASSIVE_ENDPOINT_H

#include "prov/util/fabric.h"
#include "prov/util/fid_object.h"
#include "prov/util/ops_tables.h"

#include <rdma/fi_endpoint.h>

namespace util {

class EventQueue;

class PassiveEndpoint : public FidStorage<fid_pep>, public FidObject {
public:
	PassiveEndpoint(Fabric &fabric, const struct fi_info *info, void *context);
	~PassiveEndpoint() override;

	struct fid_pep *pep_fid() noexcept { return &embedded_fid.pub; }
	Fabric &fabric() noexcept { return fabric_; }
	const struct fi_info *info() const noexcept { return info_; }
	EventQueue *eq() const noexcept { return eq_; }

	// ---- fi_ops ----
	int bind(struct fid *bfid, uint64_t flags);  // EQ only
	int close() override;

protected:
	template <class Self>
	void install_ops() noexcept
	{
		fid_pep &pub = embedded_fid.pub;
		pub.fid.ops = ops_ptr<Self, make_fi_ops<Self>>();
		pub.ops = ops_ptr<Self, make_ep_ops<Self>>();
		pub.cm = ops_ptr<Self, make_cm_ops<Self>>();
	}

private:
	Fabric &fabric_;
	struct fi_info *info_;
	EventQueue *eq_ = nullptr;
};

} // namespace util

#endif
