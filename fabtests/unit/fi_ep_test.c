/* fi_ep_test: endpoint life cycle and misuse: binding, enabling, posting too early. */
#include "../common/ft_unit.h"

static int test_context_kept(void)
{
	struct fid_ep *ep;
	int marker;
	int ret = fi_endpoint(ft.domain, ft.info, &ep, &marker);
	FT_EXPECT(ret == 0, "fi_endpoint: %d", ret);
	bool kept = ep->fid.context == &marker && ep->fid.fclass == FI_CLASS_EP;
	FT_EXPECT(fi_close(&ep->fid) == 0, "fi_close");
	FT_EXPECT(kept, "fid.context or fclass wrong");
	return 0;
}

/* fi_endpoint(3): endpoints using CQs must be bound to them before being enabled. */
static int test_enable_without_cq(void)
{
	struct fid_ep *ep;
	FT_CHECK(ft_unit_open_endpoint(&ep));
	int ret = 0;
	if (ft.info->ep_attr->type != FI_EP_MSG) {
		struct fi_av_attr attr = { .type = ft.info->domain_attr->av_type };
		if (!(ret = fi_av_open(ft.domain, &attr, &ft.av, NULL)))
			ret = fi_ep_bind(ep, &ft.av->fid, 0);
	} else {
		ret = fi_ep_bind(ep, &ft.eq->fid, 0);
	}
	int enabled = ret ? 0 : fi_enable(ep);
	fi_close(&ep->fid);
	FT_EXPECT(ret == 0, "binding the AV/EQ: %d", ret);
	FT_EXPECT(enabled < 0, "fi_enable without a CQ returned %d", enabled);
	return 0;
}

/* Posting on an endpoint that is not enabled must fail cleanly, not crash. */
static int test_send_before_enable(void)
{
	struct fid_ep *ep;
	FT_CHECK(ft_unit_open_bound_endpoint(&ep));
	char buf[16] = { 0 };
	struct fi_context2 ctx;
	ssize_t ret = fi_send(ep, buf, sizeof(buf), NULL, 0, &ctx);
	fi_close(&ep->fid);
	FT_EXPECT(ret < 0, "fi_send on a disabled endpoint returned %zd", ret);
	return 0;
}

static int test_bind_after_enable(void)
{
	struct fid_ep *ep;
	FT_CHECK(ft_unit_open_bound_endpoint(&ep));
	int ret = fi_enable(ep);
	struct fid_cq *cq = NULL;
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_CONTEXT };
	int late = -1;
	if (!ret && !(late = fi_cq_open(ft.domain, &attr, &cq, NULL)))
		late = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT);
	fi_close(&ep->fid);
	if (cq)
		fi_close(&cq->fid);
	FT_EXPECT(ret == 0, "fi_enable: %d", ret);
	FT_EXPECT(late < 0, "binding a CQ to an enabled endpoint returned %d", late);
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "ep_context", test_context_kept },
	{ "ep_enable_without_cq", test_enable_without_cq },
	{ "ep_send_before_enable", test_send_before_enable },
	{ "ep_bind_after_enable", test_bind_after_enable },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Endpoint life cycle.", cases, FT_UNIT_COUNT(cases), FI_MSG);
}
