/* fi_tagged_bw: one-way tagged send bandwidth, a window of operations in flight (-v checks each). */
#include "../common/shared.h"

static int run(void)
{
	return ft_run_benchmark(ft_bandwidth);
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Windowed tagged send bandwidth.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_TAGGED;
	if (ft.opts.verify)
		ft.opts.buf_slots = FT_WINDOW;
	return ft_run(run);
}
