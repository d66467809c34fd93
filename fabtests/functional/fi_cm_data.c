/* fi_cm_data: private data passed with fi_connect and fi_accept reaches the other side. */
#include "../common/shared.h"

#include <string.h>

static const char client_data[] = "connect-request private data from the client";
static const char server_data[] = "accept private data from the server";

static int run(void)
{
	const char *want = ft.server ? client_data : server_data;
	size_t len = ft.server ? sizeof(client_data) : sizeof(server_data);
	FT_EXPECT(ft.cm_recv_len >= len, "received %zu bytes of connection data, want %zu",
		  ft.cm_recv_len, len);
	FT_EXPECT(memcmp(ft.cm_recv_data, want, len) == 0, "connection data differs");
	/* The connection carries data too. */
	FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	if (ft.server) {
		FT_CHECK(ft_rx(ft.opts.size));
		return ft_tx(ft.opts.size);
	}
	FT_CHECK(ft_tx(ft.opts.size));
	return ft_rx(ft.opts.size);
}

int main(int argc, char **argv)
{
	ft.opts.ep_type = FI_EP_MSG;
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Connection private data.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	if (ft.opts.ep_type != FI_EP_MSG) {
		printf("not run: connection data needs -e msg\n");
		return FT_EXIT_NODATA;
	}
	ft.hints->caps = FI_MSG;
	ft.opts.verify = true;
	ft.cm_send_data = ft.server ? server_data : client_data;
	ft.cm_send_len = ft.server ? sizeof(server_data) : sizeof(client_data);
	return ft_run(run);
}
