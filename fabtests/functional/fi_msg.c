/* fi_msg: send/recv ping-pong over every size with data verification (-e msg|rdm|dgram). */
#include "../common/shared.h"

static int run(void)
{
	FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	for (size_t i = 0, size; (size = ft_next_size(i)); i++) {
		for (int iter = 0; iter < ft.opts.iterations; iter++) {
			if (ft.server) {
				FT_CHECK(ft_rx(size));
				FT_CHECK(ft_tx(size));
			} else {
				FT_CHECK(ft_tx(size));
				FT_CHECK(ft_rx(size));
			}
		}
		ft_debug("size %zu passed\n", size);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL,
				"Send/receive ping-pong with data verification.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.opts.verify = true;
	ft.hints->caps = FI_MSG;
	return ft_run(run);
}
