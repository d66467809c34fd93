#include "prov/verbs/verbs_fabric.h"

#include <cstring>
#include <memory>

#include "prov/verbs/verbs_cq.h"
#include "prov/verbs/verbs_domain.h"
#include "prov/verbs/verbs_eq.h"
#include "prov/verbs/verbs_pep.h"
#include "prov/verbs/verbs_provider.h"
#include "prov/util/ops_tables.h"

namespace verbs {

UTIL_ASSERT_IMPLEMENTED(util::make_fi_ops<VerbsFabric>().close);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<VerbsFabric>().domain);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<VerbsFabric>().domain2);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<VerbsFabric>().passive_ep);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<VerbsFabric>().eq_open);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<VerbsFabric>().wait_open);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<VerbsFabric>().trywait);

VerbsFabric::VerbsFabric(const struct fi_fabric_attr *attr, void *context)
	: util::Fabric(&::verbs::provider, attr, context)
{
	install_ops<VerbsFabric>();
}

int VerbsFabric::open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (!attr || !fabric)
		return -FI_EINVAL;
	if (attr->prov_name && std::strcmp(attr->prov_name, kProviderName) != 0)
		return -FI_EINVAL;
	if (attr->name && std::strncmp(attr->name, "IB-0x", 5) != 0)
		return -FI_ENODATA;
	*fabric = (new VerbsFabric(attr, context))->fabric_fid();
	return 0;
}

int VerbsFabric::domain(struct fi_info *info, struct fid_domain **domain, void *context)
{
	if (!domain)
		return -FI_EINVAL;
	auto object = std::make_unique<VerbsDomain>(*this, info, context);
	*domain = object.release()->domain_fid();
	return 0;
}

int VerbsFabric::domain2(struct fi_info *info, struct fid_domain **domain, uint64_t flags,
			 void *context)
{
	if (flags)
		return -FI_EBADFLAGS;
	return this->domain(info, domain, context);
}

int VerbsFabric::passive_ep(struct fi_info *info, struct fid_pep **pep, void *context)
{
	return VerbsPassiveEndpoint::open(this, info, pep, context);
}

int VerbsFabric::eq_open(struct fi_eq_attr *attr, struct fid_eq **eq, void *context)
{
	if (!attr || !eq)
		return -FI_EINVAL;
	auto object = std::make_unique<VerbsEventQueue>(*this, *attr, context);
	*eq = object.release()->eq_fid();
	return 0;
}

int VerbsFabric::wait_open(struct fi_wait_attr *, struct fid_wait **)
{
	return -FI_ENOSYS;
}

int VerbsFabric::trywait(struct fid **fids, int count)
{
	if (count < 0 || (count > 0 && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		int ret;
		if (auto *cq = util::fid_cast<VerbsCompletionQueue>(fids[i], FI_CLASS_CQ))
			ret = cq->trywait();
		else if (auto *eq = util::fid_cast<VerbsEventQueue>(fids[i], FI_CLASS_EQ))
			ret = eq->trywait();
		else
			return -FI_EINVAL;
		if (ret)
			return ret;
	}
	return 0;
}

} // namespace verbs
