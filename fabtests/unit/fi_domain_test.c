/* fi_domain_test: opening and closing domains, and closing a busy fabric or domain. */
#include "../common/ft_unit.h"

#include <string.h>

static int test_open_close(void)
{
	struct fid_domain *domain;
	int ret = fi_domain(ft.fabric, ft.info, &domain, NULL);
	FT_EXPECT(ret == 0, "fi_domain: %d", ret);
	FT_EXPECT(domain->fid.fclass == FI_CLASS_DOMAIN, "fclass %zu", domain->fid.fclass);
	ret = fi_close(&domain->fid);
	FT_EXPECT(ret == 0, "fi_close: %d", ret);
	return 0;
}

static int test_two_domains(void)
{
	struct fid_domain *a, *b;
	FT_EXPECT(fi_domain(ft.fabric, ft.info, &a, NULL) == 0, "first domain");
	int ret = fi_domain(ft.fabric, ft.info, &b, NULL);
	if (ret) {
		fi_close(&a->fid);
		FT_EXPECT(ret == 0, "second domain: %d", ret);
	}
	FT_EXPECT(a != b, "two opens returned the same domain object");
	FT_EXPECT(fi_close(&b->fid) == 0 && fi_close(&a->fid) == 0, "close");
	return 0;
}

static int test_context_kept(void)
{
	struct fid_domain *domain;
	int marker;
	FT_EXPECT(fi_domain(ft.fabric, ft.info, &domain, &marker) == 0, "fi_domain");
	bool kept = domain->fid.context == &marker;
	fi_close(&domain->fid);
	FT_EXPECT(kept, "fid.context is not the context passed to fi_domain");
	return 0;
}

/* Closing a parent with live children must fail with -FI_EBUSY and leave both usable. */
static int test_busy_domain(void)
{
	struct fid_domain *domain;
	struct fid_cq *cq;
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT };
	FT_EXPECT(fi_domain(ft.fabric, ft.info, &domain, NULL) == 0, "fi_domain");
	FT_EXPECT(fi_cq_open(domain, &attr, &cq, NULL) == 0, "fi_cq_open");
	int ret = fi_close(&domain->fid);
	int cq_ret = fi_close(&cq->fid);
	int domain_ret = ret == 0 ? 0 : fi_close(&domain->fid);
	FT_EXPECT(ret == -FI_EBUSY, "closing a domain with an open CQ returned %d", ret);
	FT_EXPECT(cq_ret == 0 && domain_ret == 0, "closing in order: %d %d", cq_ret, domain_ret);
	return 0;
}

static int test_busy_fabric(void)
{
	struct fid_domain *domain;
	FT_EXPECT(fi_domain(ft.fabric, ft.info, &domain, NULL) == 0, "fi_domain");
	int ret = fi_close(&ft.fabric->fid);
	fi_close(&domain->fid);
	FT_EXPECT(ret == -FI_EBUSY, "closing a fabric with an open domain returned %d", ret);
	return 0;
}

static int test_attr(void)
{
	struct fi_domain_attr *attr = ft.info->domain_attr;
	FT_EXPECT(attr->name && attr->name[0], "domain name");
	FT_EXPECT(attr->cq_cnt > 0 && attr->ep_cnt > 0, "cq_cnt %zu ep_cnt %zu", attr->cq_cnt,
		  attr->ep_cnt);
	FT_EXPECT(attr->mr_key_size > 0, "mr_key_size %zu", attr->mr_key_size);
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "domain_open_close", test_open_close },
	{ "domain_two_on_one_fabric", test_two_domains },
	{ "domain_context", test_context_kept },
	{ "domain_close_busy", test_busy_domain },
	{ "fabric_close_busy", test_busy_fabric },
	{ "domain_attr_sane", test_attr },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Domain open/close.", cases, FT_UNIT_COUNT(cases), 0);
}
