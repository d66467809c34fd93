/*
 * fi_inject: messages sent with fi_inject arrive intact, the send buffer is reusable at
 * once, and no send completion is written.
 */
#include "../common/shared.h"

static size_t inject_limit(void)
{
	size_t limit = ft.info->tx_attr->inject_size;
	return limit < ft.xfer_max ? limit : ft.xfer_max;
}

static int server(void)
{
	size_t limit = inject_limit();
	FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	FT_CHECK(ft_oob_sync());
	/* ft_rx checks message n against pattern seed n, as the client fills them. */
	for (size_t size = 1; size <= limit; size = size * 2 + 1) {
		FT_CHECK(ft_rx(size));
		ft_debug("received injected message of %zu bytes\n", size);
	}
	return ft_oob_sync();
}

static int client(void)
{
	size_t limit = inject_limit();
	FT_EXPECT(limit > 0, "inject_size is 0");
	FT_CHECK(ft_oob_sync());
	unsigned seed = 0;
	for (size_t size = 1; size <= limit; size = size * 2 + 1) {
		ft_fill_buf(ft.tx_buf, size, seed++);
		FT_CHECK(ft_post_inject(size, 0));
		/* The buffer is ours again: scribbling on it must not change what was sent. */
		ft_fill_buf(ft.tx_buf, size, 999);
	}
	/* Injected data may still sit in the provider (e.g. while an rdm connection is set
	 * up), so keep driving progress until the server has everything. */
	FT_CHECK(ft_progress_until_sync());

	struct fi_cq_tagged_entry entry;
	ssize_t n = fi_cq_read(ft.tx_cq, &entry, 1);
	FT_EXPECT(n == -FI_EAGAIN, "fi_inject produced a send completion (%zd)", n);

	return 0;
}

static int run(void)
{
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "fi_inject semantics.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	ft.opts.verify = true;
	ft.opts.size = 16384;
	return ft_run(run);
}
