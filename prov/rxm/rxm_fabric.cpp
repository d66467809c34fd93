// RxmFabric: opens the core fabric named by the layered provider name.
#include "prov/rxm/rxm_fabric.h"

#include "prov/rxm/rxm_cntr.h"
#include "prov/rxm/rxm_cq.h"
#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_info.h"
#include "prov/rxm/rxm_provider.h"
#include "prov/util/error.h"

#include <rdma/fi_errno.h>

#include <new>
#include <string>

namespace rxm {

namespace {

struct fid_fabric *open_core_fabric(const struct fi_fabric_attr *attr)
{
	std::string core_name;
	if (!core_name_of(attr->prov_name, &core_name) || core_name.empty())
		throw util::Error(-FI_ENODATA);
	fi_fabric_attr core_attr = *attr;
	core_attr.prov_name = const_cast<char *>(core_name.c_str());
	core_attr.prov_version = 0;
	struct fid_fabric *core = nullptr;
	int ret = fi_fabric(&core_attr, &core, nullptr);
	if (ret) {
		RXM_WARN(FI_LOG_FABRIC, "core fabric %s/%s: %s\n", core_name.c_str(),
			 attr->name ? attr->name : "(any)", fi_strerror(-ret));
		throw util::Error(ret);
	}
	return core;
}

} // namespace

RxmFabric::RxmFabric(const struct fi_fabric_attr *attr, void *context)
	: util::Fabric(&rxm_prov, attr, context), core_(open_core_fabric(attr))
{
	install_ops<RxmFabric>();
}

RxmFabric::~RxmFabric()
{
	// As before, a core fabric that refuses to close (objects of its own still open) is
	// left behind: the application's fabric goes away regardless.
	fi_close(&core_->fid);
}

int RxmFabric::domain(struct fi_info *info, struct fid_domain **domain, void *context)
{
	if (!info || !domain || !info->domain_attr)
		return -FI_EINVAL;
	auto *d = new RxmDomain(*this, info, context);
	*domain = d->domain_fid();
	return 0;
}

int RxmFabric::trywait(struct fid **fids, int count)
{
	if (count < 0 || (count > 0 && !fids))
		return -FI_EINVAL;
	for (int i = 0; i < count; i++) {
		if (!fids[i])
			return -FI_EINVAL;
		int rc;
		if (RxmCq *cq = util::fid_cast<RxmCq>(fids[i], FI_CLASS_CQ))
			rc = cq->trywait_all();
		else if (RxmCntr *cntr = util::fid_cast<RxmCntr>(fids[i], FI_CLASS_CNTR))
			rc = cntr->trywait_all();
		else if (fids[i]->fclass == FI_CLASS_EQ || fids[i]->fclass == FI_CLASS_WAIT)
			rc = util::Fabric::trywait(&fids[i], 1);
		else
			rc = -FI_EINVAL;
		if (rc)
			return rc;
	}
	return 0;
}

UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<RxmFabric>().domain);
// An EQ of the rxm fabric, so that rxm AVs can bind it for FI_EVENT (util's AV checks the
// EQ belongs to its domain's fabric): RDM endpoints report no connection events, an EQ
// carries only AV completions and what the application writes.
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<RxmFabric>().eq_open);
UTIL_ASSERT_IMPLEMENTED(util::make_fabric_ops<RxmFabric>().trywait);

int rxm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	if (!attr || !fabric)
		return -FI_EINVAL;
	try {
		auto *f = new RxmFabric(attr, context);
		*fabric = f->fabric_fid();
		return 0;
	} catch (const util::Error &e) {
		return e.code();
	} catch (const std::bad_alloc &) {
		return -FI_ENOMEM;
	}
}

} // namespace rxm
