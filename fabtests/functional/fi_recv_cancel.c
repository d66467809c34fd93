/*
 * fi_recv_cancel: a posted receive cancelled with fi_cancel completes with FI_ECANCELED
 * for its context, and the next message goes to a receive posted afterwards.
 */
#include "../common/shared.h"

#include <string.h>

static int server(void)
{
	char *cancelled_buf = ft.rx_buf;
	char *live_buf = ft.rx_buf + ft.xfer_max / 2;
	size_t len = ft.xfer_max / 2;
	void *cancel_ctx = &ft.rx_ctx[0], *live_ctx = &ft.rx_ctx[1];

	memset(cancelled_buf, 0, len);
	ssize_t ret = fi_recv(ft.ep, cancelled_buf, len, ft.mr_desc, ft.remote_addr, cancel_ctx);
	if (ret) {
		FT_PRINTERR("fi_recv", ret);
		return (int)ret;
	}
	ret = fi_cancel(&ft.ep->fid, cancel_ctx);
	if (ret == -FI_ENOSYS) {
		/* verbs: an RDMA receive queue cannot take back a posted receive. */
		fprintf(stderr, "the provider does not cancel receives (not run)\n");
		return -FI_ENOSYS;
	}
	FT_EXPECT(ret == 0, "fi_cancel returned %zd", ret);

	struct fi_cq_err_entry err;
	int wait = ft_wait_cq_entry(ft.rx_cq, NULL, &err);
	FT_EXPECT(wait == -FI_ECANCELED, "cancelled receive completed with %d, not -FI_ECANCELED",
		  wait);
	FT_EXPECT(err.op_context == cancel_ctx, "error completion for another context");

	ret = fi_recv(ft.ep, live_buf, len, ft.mr_desc, ft.remote_addr, live_ctx);
	if (ret) {
		FT_PRINTERR("fi_recv", ret);
		return (int)ret;
	}
	FT_CHECK(ft_oob_sync());
	struct fi_cq_tagged_entry entry;
	FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
	FT_EXPECT(entry.op_context == live_ctx, "message completed the cancelled receive");
	FT_CHECK(ft_check_buf(live_buf, ft.opts.size / 2, 7));
	for (size_t i = 0; i < len; i++)
		FT_EXPECT(cancelled_buf[i] == 0, "cancelled buffer was written at byte %zu", i);
	return ft_oob_sync();
}

static int client(void)
{
	FT_CHECK(ft_oob_sync());
	ft_fill_buf(ft.tx_buf, ft.opts.size / 2, 7);
	FT_CHECK(ft_post_send(ft.opts.size / 2, 0));
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	return ft_oob_sync();
}

static int run(void)
{
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Cancelling a posted receive.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	ft.opts.size = 2048;
	return ft_run(run);
}
