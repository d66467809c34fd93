/*
 * fi_multi_ep: several connectionless endpoints of one client talk to one server
 * endpoint. Each client endpoint sends a message naming its index; the server answers
 * each at the address the client registered for it, and every answer must arrive at the
 * right endpoint. Exercises per-peer connection handling (e.g. ofi_rxm over tcp).
 */
#include "../common/shared.h"

#include <stdlib.h>
#include <string.h>

#define NUM_EPS 4
#define SLOT 256

static struct fid_ep *eps[NUM_EPS];
static fi_addr_t addrs[NUM_EPS];

static int open_extra_endpoints(void)
{
	eps[0] = ft.ep;
	for (int i = 1; i < NUM_EPS; i++) {
		int ret = fi_endpoint(ft.domain, ft.info, &eps[i], NULL);
		if (!ret)
			ret = fi_ep_bind(eps[i], &ft.av->fid, 0);
		if (!ret)
			ret = fi_ep_bind(eps[i], &ft.tx_cq->fid, FI_TRANSMIT);
		if (!ret)
			ret = fi_ep_bind(eps[i], &ft.rx_cq->fid, FI_RECV);
		if (!ret)
			ret = fi_enable(eps[i]);
		if (ret) {
			FT_PRINTERR("extra endpoint", ret);
			return ret;
		}
		char name[256];
		size_t len = sizeof(name);
		if ((ret = fi_getname(&eps[i]->fid, name, &len))) {
			FT_PRINTERR("fi_getname", ret);
			return ret;
		}
		uint32_t wire_len = (uint32_t)len;
		FT_CHECK(ft_oob_send(&wire_len, sizeof(wire_len)));
		FT_CHECK(ft_oob_send(name, len));
	}
	return 0;
}

static int receive_client_names(void)
{
	addrs[0] = ft.remote_addr;
	for (int i = 1; i < NUM_EPS; i++) {
		uint32_t len;
		char name[256];
		FT_CHECK(ft_oob_recv(&len, sizeof(len)));
		FT_EXPECT(len > 0 && len <= sizeof(name), "bad name length %u", len);
		FT_CHECK(ft_oob_recv(name, len));
		int ret = fi_av_insert(ft.av, name, 1, &addrs[i], 0, NULL);
		FT_EXPECT(ret == 1, "fi_av_insert: %d", ret);
	}
	return 0;
}

static int wait_receives(int count, int *order)
{
	for (int n = 0; n < count; n++) {
		struct fi_cq_tagged_entry entry;
		FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
		int slot = (int)((struct fi_context2 *)entry.op_context - ft.rx_ctx);
		FT_EXPECT(slot >= 0 && slot < NUM_EPS, "completion for an unknown receive");
		order[n] = slot;
	}
	return 0;
}

static int post_recv_on(struct fid_ep *ep, int slot)
{
	FT_RETRY_POST(fi_recv(ep, ft.rx_buf + slot * SLOT, SLOT, ft.mr_desc, FI_ADDR_UNSPEC,
			      &ft.rx_ctx[slot]), "fi_recv");
	return 0;
}

static int send_on(struct fid_ep *ep, int slot, fi_addr_t dest, unsigned seed)
{
	char *buf = ft.tx_buf + slot * SLOT;
	ft_fill_buf(buf, SLOT, seed);
	buf[0] = (char)slot;
	FT_RETRY_POST(fi_send(ep, buf, SLOT, ft.mr_desc, dest, &ft.tx_ctx[slot]), "fi_send");
	ft.tx_posted++;
	return 0;
}

static int server(void)
{
	int order[NUM_EPS];
	FT_CHECK(receive_client_names());
	for (int i = 0; i < NUM_EPS; i++)
		FT_CHECK(post_recv_on(ft.ep, i));
	FT_CHECK(ft_progress_until_sync());
	FT_CHECK(wait_receives(NUM_EPS, order));
	for (int n = 0; n < NUM_EPS; n++) {
		/* Whatever receive it landed in, the message says which client endpoint sent it. */
		int sender = (unsigned char)ft.rx_buf[order[n] * SLOT];
		FT_EXPECT(sender < NUM_EPS, "message names endpoint %d", sender);
		FT_EXPECT(ft_buf_matches(ft.rx_buf + order[n] * SLOT + 1, SLOT - 1, (unsigned)sender + 1),
			  "payload from endpoint %d corrupted", sender);
		FT_CHECK(send_on(ft.ep, sender, addrs[sender], 100 + (unsigned)sender));
	}
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	return ft_oob_sync();
}

static int client(void)
{
	int order[NUM_EPS];
	FT_CHECK(open_extra_endpoints());
	for (int i = 0; i < NUM_EPS; i++)
		FT_CHECK(post_recv_on(eps[i], i));
	FT_CHECK(ft_oob_sync());
	for (int i = 0; i < NUM_EPS; i++)
		FT_CHECK(send_on(eps[i], i, ft.remote_addr, (unsigned)i));
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	FT_CHECK(wait_receives(NUM_EPS, order));
	for (int n = 0; n < NUM_EPS; n++) {
		int slot = order[n];
		char *buf = ft.rx_buf + slot * SLOT;
		FT_EXPECT((unsigned char)buf[0] == slot, "endpoint %d got the answer for %d", slot,
			  (unsigned char)buf[0]);
		FT_EXPECT(ft_buf_matches(buf + 1, SLOT - 1, 100 + (unsigned)slot + 1),
			  "answer to endpoint %d corrupted", slot);
	}
	FT_CHECK(ft_oob_sync());
	for (int i = 1; i < NUM_EPS; i++)
		fi_close(&eps[i]->fid);
	return 0;
}

static int run(void)
{
	if (ft.info->ep_attr->type == FI_EP_MSG) {
		printf("fi_multi_ep needs connectionless endpoints (-e rdm)\n");
		return -FI_ENODATA;
	}
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Several endpoints per process.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	ft.opts.size = NUM_EPS * SLOT;
	return ft_run(run);
}
