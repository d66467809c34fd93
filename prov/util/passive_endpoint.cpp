#include "prov/util/passive_endpoint.h"

#include "prov/util/error.h"
#include "prov/util/event_queue.h"

namespace util {

PassiveEndpoint::PassiveEndpoint(Fabric &fabric, const struct fi_info *info, void *context)
    : FidObject(embedded_fid, FI_CLASS_PEP, context), fabric_(fabric), info_(fi_dupinfo(info))
{
	if (!info_)
		throw Error(-FI_ENOMEM);
	install_ops<PassiveEndpoint>();
	fabric_.ref();
}

PassiveEndpoint::~PassiveEndpoint()
{
	if (eq_)
		eq_->unref();
	fabric_.unref();
	fi_freeinfo(info_);
}

int PassiveEndpoint::bind(struct fid *bfid, uint64_t flags)
{
	auto *eq = fid_cast<EventQueue>(bfid, FI_CLASS_EQ);
	if (!eq || &eq->fabric() != &fabric_)
		return -FI_EINVAL;
	if (flags)
		return -FI_EBADFLAGS;
	if (eq_)
		return -FI_EALREADY;
	eq->ref();
	eq_ = eq;
	return 0;
}

int PassiveEndpoint::close()
{
	if (busy())
		return -FI_EBUSY;
	return FidObject::close();
}

} // namespace util
