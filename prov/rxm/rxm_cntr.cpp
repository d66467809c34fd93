// RxmCntr: progress of the bound endpoints around util's counter.
#include "prov/rxm/rxm_cntr.h"

#include "prov/rxm/rxm_domain.h"
#include "prov/rxm/rxm_endpoint.h"

#include <rdma/fi_errno.h>

namespace rxm {

RxmCntr::RxmCntr(RxmDomain &domain, const struct fi_cntr_attr *attr, void *context)
    : Counter(domain, attr, context)
{
	embedded_fid.pub.fid.ops = util::ops_ptr<RxmCntr, util::make_fi_ops<RxmCntr>>();
}

int RxmCntr::control(int command, void *arg)
{
	int ret = Counter::control(command, arg);
	if (command == FI_GETWAIT && ret == 0)
		cores_wait_fd_handed_out(eps_);
	return ret;
}

void RxmCntr::attach(RxmEndpoint *ep)
{
	eps_.add(ep);
	ref();
}

void RxmCntr::detach(RxmEndpoint *ep)
{
	if (eps_.remove(ep))
		unref();
}

void RxmCntr::run_progress()
{
	eps_.for_each([](RxmEndpoint *ep) { ep->progress(); });
}

int RxmCntr::trywait_all()
{
	return trywait_with_cores(*this, eps_);
}

} // namespace rxm
