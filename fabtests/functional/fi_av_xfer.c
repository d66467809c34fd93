/*
 * fi_av_xfer: address vector changes while an endpoint carries traffic. Rounds of
 * verified ping-pong; in every round the server inserts and removes an unrelated address
 * while its receive is posted and the client's message is on the way; between rounds
 * first the client, later the server removes its peer's address and inserts it again
 * (fi_av_lookup gives the name back), and the ping-pong must go on through the new
 * fi_addr_t. Addresses are only removed when no operation uses them (fi_av(3) leaves
 * operations in progress on a removed address undefined).
 */
#include "../common/shared.h"

#include <string.h>

#define ROUNDS 9
#define CLIENT_REINSERTS_AT 2
#define SERVER_REINSERTS_AT 5
#define NAME_MAX_LEN 256

/* Removes the peer's address and inserts it again; ft.remote_addr becomes the new one. */
static int reinsert_peer(void)
{
	char name[NAME_MAX_LEN];
	size_t len = sizeof(name);
	int ret = fi_av_lookup(ft.av, ft.remote_addr, name, &len);
	if (ret) {
		FT_PRINTERR("fi_av_lookup", ret);
		return ret;
	}
	FT_EXPECT(len <= sizeof(name), "peer name of %zu bytes", len);
	if ((ret = fi_av_remove(ft.av, &ft.remote_addr, 1, 0))) {
		FT_PRINTERR("fi_av_remove", ret);
		return ret;
	}
	ret = fi_av_insert(ft.av, name, 1, &ft.remote_addr, 0, NULL);
	FT_EXPECT(ret == 1, "fi_av_insert of the removed peer returned %d", ret);
	FT_EXPECT(ft.remote_addr != FI_ADDR_NOTAVAIL, "reinserted peer got FI_ADDR_NOTAVAIL");
	return 0;
}

/* Inserts an address nobody talks to (our own endpoint's) and removes it again. */
static int churn_unrelated(void)
{
	char name[NAME_MAX_LEN];
	size_t len = sizeof(name);
	int ret = fi_getname(&ft.ep->fid, name, &len);
	if (ret) {
		FT_PRINTERR("fi_getname", ret);
		return ret;
	}
	fi_addr_t self;
	ret = fi_av_insert(ft.av, name, 1, &self, 0, NULL);
	FT_EXPECT(ret == 1, "fi_av_insert of our own address returned %d", ret);
	FT_EXPECT(self != ft.remote_addr, "our own address got the peer's fi_addr");
	if ((ret = fi_av_remove(ft.av, &self, 1, 0)))
		FT_PRINTERR("fi_av_remove", ret);
	return ret;
}

static int round_trip(int round, size_t size)
{
	if (ft.server) {
		FT_CHECK(churn_unrelated());  /* the client's message may be arriving now */
		FT_CHECK(ft_rx(size));
		return ft_tx(size);
	}
	FT_CHECK(ft_tx(size));
	FT_CHECK(ft_rx(size));
	ft_debug("round %d done\n", round);
	return 0;
}

static int run(void)
{
	size_t size = ft.opts.size;
	FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	for (int round = 0; round < ROUNDS; round++) {
		FT_CHECK(round_trip(round, size));
		if (round == CLIENT_REINSERTS_AT || round == SERVER_REINSERTS_AT) {
			/* Both sides quiet: the peer's address is not in use by any operation. */
			FT_CHECK(ft_oob_sync());
			if (ft.server == (round == SERVER_REINSERTS_AT))
				FT_CHECK(reinsert_peer());
			FT_CHECK(ft_oob_sync());
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "AV insert/remove during traffic.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	if (ft.opts.ep_type == FI_EP_MSG) {
		fprintf(stderr, "fi_av_xfer needs connectionless endpoints (not run)\n");
		return FT_EXIT_NODATA;
	}
	ft.hints->caps = FI_MSG;
	ft.opts.verify = true;
	return ft_run(run);
}
