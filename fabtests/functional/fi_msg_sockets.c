/*
 * fi_msg_sockets: one listener serves several connections, and its address can be
 * listened on again at once. After the usual connection, the client connects EXTRA_EPS
 * more endpoints to the same passive endpoint, one message crosses each connection;
 * then everything is closed (the server first, so its side of each connection lingers
 * in TIME_WAIT) and the server listens on the same port again with a new passive
 * endpoint, which must succeed and accept a new connection.
 */
#include "../common/shared.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXTRA_EPS 3
#define MSG_LEN 64

static struct fid_ep *extra[EXTRA_EPS];

static int open_bound_ep(struct fi_info *info, struct fid_ep **ep)
{
	int ret = fi_endpoint(ft.domain, info, ep, NULL);
	if (!ret)
		ret = fi_ep_bind(*ep, &ft.eq->fid, 0);
	if (!ret)
		ret = fi_ep_bind(*ep, &ft.tx_cq->fid, FI_TRANSMIT);
	if (!ret)
		ret = fi_ep_bind(*ep, &ft.rx_cq->fid, FI_RECV);
	if (!ret)
		ret = fi_enable(*ep);
	if (ret)
		FT_PRINTERR("opening an endpoint", ret);
	return ret;
}

static int exchange_on(struct fid_ep *ep, unsigned seed)
{
	if (ft.server) {
		FT_RETRY_POST(fi_recv(ep, ft.rx_buf, MSG_LEN, ft.mr_desc, 0, &ft.rx_ctx[0]),
			      "fi_recv");
		ft.rx_posted++;
		FT_CHECK(ft_oob_sync());
		FT_CHECK(ft_get_rx_comp(ft.rx_posted));
		return ft_check_buf(ft.rx_buf, MSG_LEN, seed);
	}
	ft_fill_buf(ft.tx_buf, MSG_LEN, seed);
	FT_CHECK(ft_oob_sync());
	FT_RETRY_POST(fi_send(ep, ft.tx_buf, MSG_LEN, ft.mr_desc, 0, &ft.tx_ctx[0]), "fi_send");
	ft.tx_posted++;
	return ft_get_tx_comp(ft.tx_posted);
}

/* Server: accept one more connection on ft.pep into *ep. */
static int accept_one(struct fid_ep **ep)
{
	FT_CHECK(ft_wait_cm_event(FI_CONNREQ));  /* ft.info := the request's info */
	FT_CHECK(open_bound_ep(ft.info, ep));
	int ret = fi_accept(*ep, NULL, 0);
	if (ret) {
		FT_PRINTERR("fi_accept", ret);
		return ret;
	}
	return ft_wait_cm_event(FI_CONNECTED);
}

static int connect_one(struct fid_ep **ep)
{
	FT_CHECK(open_bound_ep(ft.info, ep));
	int ret = fi_connect(*ep, ft.info->dest_addr, NULL, 0);
	if (ret) {
		FT_PRINTERR("fi_connect", ret);
		return ret;
	}
	return ft_wait_cm_event(FI_CONNECTED);
}

static void close_eps(void)
{
	for (int i = 0; i < EXTRA_EPS; i++) {
		if (extra[i])
			fi_close(&extra[i]->fid);
		extra[i] = NULL;
	}
	fi_close(&ft.ep->fid);
	ft.ep = NULL;
}

/* The server's closing leaves FI_SHUTDOWN events for the client's endpoints: read them
 * so the next connection's events come first. */
static int drain_shutdowns(void)
{
	uint64_t end = ft_now_usec() + 300000;
	while (ft_now_usec() < end) {
		uint32_t event;
		struct fi_eq_cm_entry entry;
		ssize_t n = fi_eq_read(ft.eq, &event, &entry, sizeof(entry), 0);
		if (n == -FI_EAGAIN) {
			struct timespec ts = { 0, 10000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };
			fi_eq_readerr(ft.eq, &err, 0);  /* a peer's close may be reported as an error */
			continue;
		}
		FT_EXPECT(n >= 0 && event == FI_SHUTDOWN, "unexpected event %u (%zd)", event, n);
	}
	return 0;
}

/* A new passive endpoint on the very address the first one used. */
static int relisten(void)
{
	fi_close(&ft.pep->fid);
	ft.pep = NULL;
	struct fi_info *info = NULL;
	int ret = fi_getinfo(FT_API_VERSION, ft.opts.src_addr, ft.opts.src_port, FI_SOURCE,
			     ft.hints, &info);
	if (ret) {
		FT_PRINTERR("fi_getinfo (listen again)", ret);
		return ret;
	}
	if ((ret = fi_passive_ep(ft.fabric, info, &ft.pep, NULL)) ||
	    (ret = fi_pep_bind(ft.pep, &ft.eq->fid, 0)))
		FT_PRINTERR("passive endpoint (listen again)", ret);
	else if ((ret = fi_listen(ft.pep)))
		FT_ERR("fi_listen on the address just closed: %s (address not reusable)",
		       fi_strerror(-ret));
	fi_freeinfo(info);
	return ret;
}

static int run(void)
{
	if (ft.info->ep_attr->type != FI_EP_MSG) {
		printf("fi_msg_sockets needs connected endpoints (-e msg)\n");
		return -FI_ENODATA;
	}
	FT_CHECK(exchange_on(ft.ep, 1));
	for (int i = 0; i < EXTRA_EPS; i++) {
		FT_CHECK(ft_oob_sync());  /* one connection request at a time */
		FT_CHECK(ft.server ? accept_one(&extra[i]) : connect_one(&extra[i]));
		FT_CHECK(exchange_on(extra[i], 10 + (unsigned)i));
	}
	/* The server closes first; the client waits until it has. */
	if (ft.server) {
		close_eps();
		FT_CHECK(ft_oob_sync());
		FT_CHECK(relisten());
		FT_CHECK(ft_oob_sync());
		FT_CHECK(accept_one(&ft.ep));
	} else {
		FT_CHECK(ft_oob_sync());
		close_eps();
		FT_CHECK(drain_shutdowns());
		FT_CHECK(ft_oob_sync());
		FT_CHECK(connect_one(&ft.ep));
	}
	return exchange_on(ft.ep, 99);
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL,
				"Several connections per listener; listening again on its address.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	ft.hints->ep_attr->type = FI_EP_MSG;
	ft.opts.ep_type = FI_EP_MSG;
	return ft_run(run);
}
