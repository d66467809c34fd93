/* fi_tagged_pingpong: latency of tagged send/recv ping-pong (-e msg|rdm, -t queue|counter, -c ...). */
#include "../common/shared.h"

static int run(void)
{
	return ft_run_benchmark(ft_pingpong);
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Tagged send/receive ping-pong latency.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_TAGGED;
	return ft_run(run);
}
