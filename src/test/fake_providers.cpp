// See fake_providers.h.
#include "src/test/fake_providers.h"
#include "src/provider_registry.h"

#include <rdma/fabric.h>

#include <cstring>
#include <mutex>
#include <string>

namespace fake {

Observed observed;
fi_threading threading = FI_THREAD_SAFE;

namespace {

// Tests may call fi_getinfo from several threads at once.
std::mutex observed_lock;

fi_info *make_info(const char *prov_name, fi_ep_type type, uint64_t caps)
{
	fi_info *info = fi_allocinfo();
	info->caps = caps;
	info->addr_format = FI_SOCKADDR_IN;
	info->mode = FI_CONTEXT;
	info->ep_attr->type = type;
	info->ep_attr->max_msg_size = 1 << 20;
	info->ep_attr->protocol = FI_PROTO_SOCK_TCP;
	info->tx_attr->caps = caps;
	info->tx_attr->msg_order = FI_ORDER_SAS;
	info->tx_attr->inject_size = 64;
	info->tx_attr->size = 256;
	info->tx_attr->iov_limit = 4;
	info->tx_attr->rma_iov_limit = 1;
	info->rx_attr->caps = caps;
	info->rx_attr->msg_order = FI_ORDER_SAS;
	info->rx_attr->size = 256;
	info->rx_attr->iov_limit = 4;
	info->domain_attr->name = strdup("fake0");
	info->domain_attr->threading = threading;
	info->domain_attr->control_progress = FI_PROGRESS_AUTO;
	info->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	info->domain_attr->resource_mgmt = FI_RM_ENABLED;
	info->domain_attr->av_type = FI_AV_UNSPEC;
	info->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				     FI_MR_PROV_KEY;
	info->domain_attr->mr_key_size = 8;
	info->domain_attr->cq_data_size = 8;
	info->domain_attr->cq_cnt = 16;
	info->domain_attr->ep_cnt = 16;
	info->domain_attr->tx_ctx_cnt = 16;
	info->domain_attr->rx_ctx_cnt = 16;
	info->domain_attr->max_ep_tx_ctx = 1;
	info->domain_attr->max_ep_rx_ctx = 1;
	info->domain_attr->mr_iov_limit = 1;
	info->fabric_attr->name = strdup("fakenet");
	// Core providers may leave prov_name to the core; utility ones name the layering.
	if (prov_name)
		info->fabric_attr->prov_name = strdup(prov_name);
	return info;
}

constexpr uint64_t msg_caps = FI_MSG | FI_RMA | FI_SEND | FI_RECV | FI_READ | FI_WRITE |
			      FI_REMOTE_READ | FI_REMOTE_WRITE | FI_MULTI_RECV | FI_SOURCE;

int core_getinfo(uint32_t, const char *node, const char *service, uint64_t flags,
		 const fi_info *, fi_info **info)
{
	{
		std::lock_guard guard(observed_lock);
		++observed.core_calls;
		observed.node = node;
		observed.service = service;
		observed.flags = flags;
	}
	fi_info *msg = make_info(nullptr, FI_EP_MSG, msg_caps);
	msg->next = make_info(nullptr, FI_EP_RDM, msg_caps | FI_TAGGED);
	*info = msg;
	return 0;
}

int other_getinfo(uint32_t, const char *, const char *, uint64_t, const fi_info *,
		  fi_info **info)
{
	*info = make_info(nullptr, FI_EP_MSG, msg_caps);
	return 0;
}

int util_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		 const fi_info *, fi_info **info)
{
	{
		std::lock_guard guard(observed_lock);
		++observed.util_calls;
	}
	fi_info *hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_MSG;
	hints->mode = ~0ULL;
	hints->domain_attr->mr_mode = ~0;
	hints->domain_attr->mode = ~0ULL;
	fi_info *core = nullptr;
	int ret = fi_getinfo(version, node, service, flags, hints, &core);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	fi_info *head = nullptr;
	fi_info **tail = &head;
	for (fi_info *cur = core; cur; cur = cur->next) {
		std::string name = std::string(cur->fabric_attr->prov_name) + ";ofi_util";
		fi_info *layered = fi_dupinfo(cur);
		free(layered->fabric_attr->prov_name);
		layered->fabric_attr->prov_name = strdup(name.c_str());
		layered->ep_attr->type = FI_EP_RDM;
		layered->caps |= FI_TAGGED;
		layered->mode = 0;
		*tail = layered;
		tail = &layered->next;
	}
	fi_freeinfo(core);
	*info = head;
	return 0;
}

int fake_fabric(fi_fabric_attr *attr, fid_fabric **fabric, void *)
{
	++observed.fabric_calls;
	observed.fabric_prov_name = attr->prov_name;
	*fabric = nullptr;
	return -FI_EAGAIN; // distinctive, so tests can see which provider got the call
}

int util_fabric(fi_fabric_attr *attr, fid_fabric **fabric, void *)
{
	++observed.fabric_calls;
	observed.fabric_prov_name = attr->prov_name;
	*fabric = nullptr;
	return -FI_EBUSY;
}

} // namespace

fi_provider core_provider = {FI_VERSION(3, 1), FI_VERSION(1, 17), {}, "fake",
			     core_getinfo, fake_fabric, nullptr};
fi_provider util_provider = {FI_VERSION(4, 2), FI_VERSION(1, 17), {}, "ofi_util",
			     util_getinfo, util_fabric, nullptr};
fi_provider second_provider = {FI_VERSION(5, 0), FI_VERSION(1, 17), {}, "other",
			       other_getinfo, fake_fabric, nullptr};

Installed::Installed()
{
	observed = Observed{};
	threading = FI_THREAD_SAFE;
	unsetenv("FI_PROVIDER");
	ofi::core::registry_replace_for_test({&core_provider, &second_provider, &util_provider});
}

Installed::~Installed()
{
	ofi::core::registry_restore_for_test();
}

} // namespace fake

ScopedEnv::ScopedEnv(const char *name, const char *value) : name_(name), saved_(nullptr)
{
	if (const char *old = getenv(name))
		saved_ = strdup(old);
	if (value)
		setenv(name, value, 1);
	else
		unsetenv(name);
}

ScopedEnv::~ScopedEnv()
{
	if (saved_) {
		setenv(name_, saved_, 1);
		free(saved_);
	} else {
		unsetenv(name_);
	}
}
