/* fi_ep_test: endpoint life cycle and misuse: binding, enabling, posting too early. */
#include "../common/ft_unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>

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

/* Several connectionless endpoints on one domain, each from an info whose source address is
 * the loopback address with port 0, must each get an address of their own (an ephemeral
 * port), not -FI_EADDRINUSE from the second fi_enable. */
static int test_several_on_one_domain(void)
{
	if (ft.info->ep_attr->type == FI_EP_MSG || ft.info->addr_format != FI_SOCKADDR_IN)
		return -FI_ENODATA; /* MSG endpoints take their address when they connect */
	struct fi_info *info = fi_dupinfo(ft.info);
	FT_EXPECT(info != NULL, "fi_dupinfo");
	struct sockaddr_in *any_port = calloc(1, sizeof(*any_port));
	FT_EXPECT(any_port != NULL, "calloc");
	any_port->sin_family = AF_INET;
	any_port->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	free(info->src_addr);
	info->src_addr = any_port;
	info->src_addrlen = sizeof(*any_port);

	enum { kEndpoints = 3 };
	struct fid_ep *ep[kEndpoints] = { NULL };
	struct sockaddr_in name[kEndpoints];
	int ret = 0, opened = 0;
	ft_unit_open_bound_endpoint(&ep[0]); /* opens the shared CQ and AV */
	fi_close(&ep[0]->fid);
	for (; opened < kEndpoints && !ret; opened++) {
		ret = fi_endpoint(ft.domain, info, &ep[opened], NULL);
		if (ret) {
			FT_ERR("fi_endpoint %d: %d", opened, ret);
			break;
		}
		size_t len = sizeof(name[opened]);
		if ((ret = fi_ep_bind(ep[opened], &ft.tx_cq->fid, FI_TRANSMIT | FI_RECV)) ||
		    (ret = fi_ep_bind(ep[opened], &ft.av->fid, 0)) ||
		    (ret = fi_enable(ep[opened])) ||
		    (ret = fi_getname(&ep[opened]->fid, &name[opened], &len)))
			FT_ERR("endpoint %d: bind/enable/getname: %d (%s)", opened, ret,
			       fi_strerror(-ret));
	}
	bool distinct = !ret;
	for (int i = 0; i < kEndpoints && distinct; i++) {
		distinct = name[i].sin_port != 0;
		for (int j = 0; j < i; j++)
			distinct = distinct && name[i].sin_port != name[j].sin_port;
	}
	for (int i = 0; i < opened; i++)
		if (ep[i])
			fi_close(&ep[i]->fid);
	fi_freeinfo(info);
	FT_EXPECT(ret == 0, "an endpoint on 127.0.0.1 port 0 failed: %d", ret);
	FT_EXPECT(distinct, "the endpoints did not get ports of their own");
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "ep_context", test_context_kept },
	{ "ep_enable_without_cq", test_enable_without_cq },
	{ "ep_send_before_enable", test_send_before_enable },
	{ "ep_bind_after_enable", test_bind_after_enable },
	{ "ep_several_on_one_domain", test_several_on_one_domain },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Endpoint life cycle.", cases, FT_UNIT_COUNT(cases), FI_MSG);
}
