// RxmDomain's shm side (rxm_domain.h): the shm fabric and domain that the shm sides of all the
// domain's endpoints share, and the twins of registrations in it. Registrations are per
// domain: a peer moved to shm reaches our memory through the shm domain, so the memory it may
// reach over the core must be registered there too, under the key it already holds.
#include "prov/rxm/rxm_domain.h"

#include "prov/rxm/rxm_provider.h"

#include <rdma/fi_errno.h>

#include <cstring>
#include <vector>

namespace rxm {

namespace {

struct fi_info *shm_hints(bool rma)
{
	fi_info *hints = fi_allocinfo();
	if (!hints)
		return nullptr;
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG | FI_SEND | FI_RECV;
	if (rma)
		hints->caps |= FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->addr_format = FI_ADDR_STR;
	// Keys as requested (the twin takes the core's key) and addresses as offsets (a twin of
	// a core registration addressed by virtual address starts at that address instead).
	hints->domain_attr->mr_mode = 0;
	hints->fabric_attr->prov_name = strdup("shm");
	if (!hints->fabric_attr->prov_name) {
		fi_freeinfo(hints);
		return nullptr;
	}
	return hints;
}

} // namespace

int RxmDomain::open_shm_domain()
{
	std::lock_guard guard(mr_lock_);
	if (shm_domain_)
		return 0;
	if (shm_open_error_)
		return shm_open_error_;
	fi_info *hints = shm_hints(rma_capable_);
	fi_info *info = nullptr;
	int ret = hints ? fi_getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints, &info)
			: -FI_ENOMEM;
	fi_freeinfo(hints);
	shm_info_.reset(info);
	if (!ret && lower_domains_need_no_lock(util::Domain::info()))
		info->domain_attr->threading = FI_THREAD_DOMAIN;
	struct fid_fabric *fabric = nullptr;
	if (!ret)
		ret = fi_fabric(info->fabric_attr, &fabric, nullptr);
	shm_fabric_.reset(fabric);
	struct fid_domain *domain = nullptr;
	if (!ret)
		ret = fi_domain(fabric, info, &domain, nullptr);
	shm_domain_.reset(domain);
	if (!ret)
		ret = twin_registered_mrs();
	if (ret) {
		RXM_INFO(FI_LOG_DOMAIN, "no shm domain (%s): peers stay on the core\n",
			 fi_strerror(-ret));
		shm_domain_.reset();
		shm_fabric_.reset();
		shm_info_.reset();
		shm_open_error_ = ret;
	}
	return ret;
}

// Registrations made before the shm domain existed get their twins now; one that cannot
// (out of memory) leaves the domain without a shm side rather than with a peer that finds
// less over shm than over the core.
int RxmDomain::twin_registered_mrs()
{
	std::vector<RxmMr *> twinned;
	int ret = 0;
	for (auto &[key, mr] : mrs_) {
		if (!mr->grants_remote())
			continue;
		struct fid_mr *twin = nullptr;
		ret = register_shm_twin(mr->base(), mr->length(), mr->access(), key, mr->offset(),
					&twin);
		if (ret)
			break;
		mr->set_shm_twin(twin);
		twinned.push_back(mr);
	}
	if (ret)
		for (RxmMr *mr : twinned) {
			fi_close(&mr->shm_twin()->fid);
			mr->set_shm_twin(nullptr);
		}
	return ret;
}

int RxmDomain::register_shm_twin(void *buf, size_t len, uint64_t access, uint64_t key,
				 uint64_t offset, struct fid_mr **twin)
{
	iovec iov{buf, len};
	fi_mr_attr attr{};
	attr.mr_iov = &iov;
	attr.iov_count = 1;
	attr.access = access;
	attr.requested_key = key;
	attr.offset = core_uses_virt_addr() ? reinterpret_cast<uintptr_t>(buf) : offset;
	return fi_mr_regattr(shm_domain_.get(), &attr, 0, twin);
}

int RxmDomain::close_shm_domain()
{
	if (shm_domain_) {
		int ret = fi_close(&shm_domain_->fid);
		if (ret)
			return ret;
		(void)shm_domain_.release();
	}
	if (shm_fabric_) {
		int ret = fi_close(&shm_fabric_->fid);
		if (ret)
			return ret;
		(void)shm_fabric_.release();
	}
	shm_info_.reset();
	return 0;
}

} // namespace rxm
