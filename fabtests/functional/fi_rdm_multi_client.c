/*
 * fi_rdm_multi_client: one persistent server endpoint, clients that come and go. The
 * client process plays CLIENTS clients in turn: each opens all its fabric resources
 * afresh (a new endpoint with a new address), sends its name, exchanges verified
 * messages with the server, and closes everything. The server keeps its endpoint, inserts
 * each new client, talks to it, and removes the address of the one that left; the
 * departed clients' connections must not disturb the next ones.
 */
#include "../common/shared.h"

#include <stdlib.h>

#define CLIENTS 4
#define MESSAGES 5

static int ping_pong(void)
{
	for (int i = 0; i < MESSAGES; i++) {
		if (ft.server) {
			FT_CHECK(ft_rx(ft.opts.size));
			FT_CHECK(ft_tx(ft.opts.size));
		} else {
			FT_CHECK(ft_tx(ft.opts.size));
			FT_CHECK(ft_rx(ft.opts.size));
		}
	}
	return 0;
}

/* Server: the next client's name arrives over the OOB socket. */
static int admit_client(void)
{
	void *name;
	size_t len;
	uint32_t format;
	FT_CHECK(ft_recv_name(&name, &len, &format));
	int ret = fi_av_insert(ft.av, name, 1, &ft.remote_addr, 0, NULL);
	free(name);
	FT_EXPECT(ret == 1, "fi_av_insert of a new client returned %d", ret);
	return 0;
}

/* Client: everything is opened again, as by a new process. */
static int become_new_client(void)
{
	ft_close_fabric_res();
	FT_CHECK(ft_getinfo());
	FT_CHECK(ft_open_fabric());
	FT_CHECK(ft_open_domain_res());
	FT_CHECK(ft_send_name(&ft.ep->fid));
	/* The server's address: from -E (hints) or resolved from node/service by getinfo. */
	const void *server = ft.hints->dest_addr ? ft.hints->dest_addr : ft.info->dest_addr;
	FT_EXPECT(server, "no server address to insert");
	int ret = fi_av_insert(ft.av, server, 1, &ft.remote_addr, 0, NULL);
	FT_EXPECT(ret == 1, "fi_av_insert of the server returned %d", ret);
	return 0;
}

static int run(void)
{
	if (ft.info->ep_attr->type == FI_EP_MSG) {
		printf("fi_rdm_multi_client needs connectionless endpoints (-e rdm)\n");
		return -FI_ENODATA;
	}
	/* Every message of a client's exchange carries the pattern of its sequence number
	 * (tx_seq/rx_posted), and each new client starts counting from zero again. */
	FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	for (int client = 0; client < CLIENTS; client++) {
		if (client > 0) {
			if (ft.server) {
				fi_addr_t gone = ft.remote_addr;
				FT_CHECK(admit_client());
				int ret = fi_av_remove(ft.av, &gone, 1, 0);
				if (ret) {
					FT_PRINTERR("fi_av_remove of a departed client", ret);
					return ret;
				}
				ft.tx_seq = 0;
				/* The posted receive keeps its slot; renumber it as the first. */
				ft.rx_posted = 1;
				ft.rx_done = 0;
			} else {
				FT_CHECK(become_new_client());
				FT_CHECK(ft_post_recv(ft.xfer_max, 0));
			}
		}
		FT_CHECK(ft_oob_sync());
		FT_CHECK(ping_pong());
		ft_debug("client %d done\n", client);
		FT_CHECK(ft_oob_sync());
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Persistent server, sequential clients.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	ft.opts.verify = true;
	return ft_run(run);
}
