/* fi_bw: one-way send bandwidth, a window of operations in flight (-v checks each message). */
#include "../common/shared.h"

static int run(void)
{
	return ft_run_benchmark(ft_bandwidth);
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Windowed send bandwidth.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	if (ft.opts.verify)
		ft.opts.buf_slots = FT_WINDOW;
	return ft_run(run);
}
