#include "prov/util/test/fake_provider.h"

namespace fake {

struct fi_provider provider = {
	FI_VERSION(1, 0), FI_VERSION(1, 17), {}, "utiltest", nullptr, nullptr, nullptr,
};

void Fixture::open(uint32_t api_version, enum fi_threading threading,
		   enum fi_progress progress)
{
	info = fi_allocinfo();
	ASSERT_NE(info, nullptr);
	info->fabric_attr->api_version = api_version;
	info->domain_attr->threading = threading;
	info->domain_attr->data_progress = progress;
	info->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	info->domain_attr->mr_mode = FI_MR_PROV_KEY | FI_MR_VIRT_ADDR;
	info->addr_format = FI_SOCKADDR;
	auto *object = new FakeFabric(info->fabric_attr, nullptr);
	fabric = object->fabric_fid();
	ASSERT_EQ(fi_domain(fabric, info, &domain, nullptr), 0);
	domain_object = util::fid_cast<util::Domain>(&domain->fid, FI_CLASS_DOMAIN);
	ASSERT_NE(domain_object, nullptr);
}

void Fixture::close_all()
{
	if (domain) {
		EXPECT_EQ(fi_close(&domain->fid), 0);
	}
	if (fabric) {
		EXPECT_EQ(fi_close(&fabric->fid), 0);
	}
	fi_freeinfo(info);
	domain = nullptr;
	fabric = nullptr;
	info = nullptr;
}

struct fid_cq *Fixture::open_cq(enum fi_cq_format format, size_t size, enum fi_wait_obj wait)
{
	struct fi_cq_attr attr{};
	attr.format = format;
	attr.size = size;
	attr.wait_obj = wait;
	struct fid_cq *cq = nullptr;
	EXPECT_EQ(fi_cq_open(domain, &attr, &cq, this), 0);
	return cq;
}

struct fid_ep *Fixture::open_ep()
{
	struct fid_ep *ep = nullptr;
	EXPECT_EQ(fi_endpoint(domain, info, &ep, nullptr), 0);
	return ep;
}

} // namespace fake
