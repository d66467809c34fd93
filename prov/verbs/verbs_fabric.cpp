#include "prov/verbs/verbs_fabric.h"

#include <cstring>

#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_eq.h"
#include "prov/verbs/verbs_pep.h"
#include "prov/verbs/verbs_provider.h"

namespace verbs {
namespace {

struct fi_ops *fabric_fi_ops()
{
	static struct fi_ops ops = [] {
		struct fi_ops o {};
		o.size = sizeof(o);
		o.close = Op<&VerbsFabric::close>::call;
		VERBS_UNSUPPORTED(o, bind);
		VERBS_UNSUPPORTED(o, control);
		VERBS_UNSUPPORTED(o, ops_open);
		VERBS_UNSUPPORTED(o, tostr);
		VERBS_UNSUPPORTED(o, ops_set);
		return o;
	}();
	return &ops;
}

struct fi_ops_fabric *fabric_ops()
{
	static struct fi_ops_fabric ops = [] {
		struct fi_ops_fabric o {};
		o.size = sizeof(o);
		o.domain = Op<&VerbsFabric::domain>::call;
		o.passive_ep = Op<&VerbsFabric::passive_ep>::call;
		o.eq_open = Op<&VerbsFabric::eq_open>::call;
		VERBS_UNSUPPORTED(o, wait_open);
		o.trywait = Op<&VerbsFabric::trywait>::call;
		o.domain2 = Op<&VerbsFabric::domain2>::call;
		return o;
	}();
	return &ops;
}

} // namespace

int VerbsFabric::open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (!attr || !fabric)
		return -FI_EINVAL;
	if (attr->prov_name && std::strcmp(attr->prov_name, kProviderName) != 0)
		return -FI_EINVAL;
	if (attr->name && std::strncmp(attr->name, "IB-0x", 5) != 0)
		return -FI_ENODATA;
	auto *self = new VerbsFabric();
	self->fid_.init(self, FI_CLASS_FABRIC, context, fabric_fi_ops());
	self->fid_.pub.ops = fabric_ops();
	self->fid_.pub.api_version = attr->api_version ? attr->api_version : FI_VERSION(1, 17);
	self->name_ = attr->name ? attr->name : "";
	*fabric = &self->fid_.pub;
	return 0;
}

int VerbsFabric::close()
{
	if (children.load() > 0)
		return -FI_EBUSY;
	fid_.invalidate();
	delete this;
	return 0;
}

int VerbsFabric::domain(struct fi_info *info, struct fid_domain **domain, void *context)
{
	return VerbsDomain::open(this, info, domain, context);
}

int VerbsFabric::domain2(struct fi_info *info, struct fid_domain **domain, uint64_t flags,
			 void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return VerbsDomain::open(this, info, domain, context);
}

int VerbsFabric::passive_ep(struct fi_info *info, struct fid_pep **pep, void *context)
{
	return VerbsPassiveEndpoint::open(this, info, pep, context);
}

int VerbsFabric::eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context)
{
	return VerbsEventQueue::open(this, attr, eq, context);
}

int VerbsFabric::trywait(struct fid **fids, int count)
{
	if (count < 0 || (count > 0 && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		int ret;
		if (VerbsCompletionQueue *cq = VerbsCompletionQueue::from_fid(fids[i]))
			ret = cq->trywait();
		else if (VerbsEventQueue *eq = VerbsEventQueue::from_fid(fids[i]))
			ret = eq->trywait();
		else
			return -FI_EINVAL;
		if (ret)
			return ret;
	}
	return 0;
}

} // namespace verbs
