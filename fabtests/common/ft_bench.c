/* The measured loops of the benchmarks: ping-pong latency and windowed bandwidth. */
#include "shared.h"

#include <poll.h>

int ft_pingpong(size_t size)
{
	bool inject = size <= ft.info->tx_attr->inject_size && ft.tx_cq;
	uint64_t start = 0;
	for (int i = 0; i < ft.opts.warmup + ft.opts.iterations; i++) {
		if (i == ft.opts.warmup)
			start = ft_now_usec();
		if (!ft.server) {
			if (inject)
				FT_CHECK(ft_post_inject(size, 0));
			else
				FT_CHECK(ft_tx(size));
			FT_CHECK(ft_rx(size));
		} else {
			FT_CHECK(ft_rx(size));
			if (inject)
				FT_CHECK(ft_post_inject(size, 0));
			else
				FT_CHECK(ft_tx(size));
		}
	}
	ft_show_perf("pingpong", size, ft.opts.iterations, ft_now_usec() - start, 2);
	return 0;
}

/* With -v, receives rx_done-count .. rx_done-1 (each in its own slot) carry patterns of
 * the same numbers; checked before their slots are reused. */
static int check_window(size_t size, int count)
{
	if (!ft.opts.verify)
		return 0;
	for (uint64_t n = ft.rx_done - (uint64_t)count; n < ft.rx_done; n++)
		FT_CHECK(ft_check_buf(ft_rx_slot(n), size, (unsigned)n));
	return 0;
}

/*
 * The client keeps a window of sends in flight; the server keeps the same number of
 * receives posted and answers each window with one small acknowledgement, so the client
 * never overruns receives that are not posted yet.
 */
static int bandwidth_window(size_t size, int count)
{
	if (ft.server) {
		uint64_t target = ft.rx_done + (uint64_t)count;
		/* One receive is always posted already (see ft_run_benchmark). */
		for (int i = 1; i < count; i++)
			FT_CHECK(ft_post_recv(ft.xfer_max, 0));
		FT_CHECK(ft_get_rx_comp(target));
		FT_CHECK(check_window(size, count));
		FT_CHECK(ft_post_recv(ft.xfer_max, 0));
		return ft_tx(1);
	}
	for (int i = 0; i < count; i++)
		FT_CHECK(ft_post_send(size, 0));
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	return ft_rx(1);
}

/*
 * Runs warm-up + iterations operations in windows of at most ft_window(); a window
 * never spans the end of the warm-up, so the clock starts exactly after the last warm-up
 * operation and the measured count is exactly -I.
 */
int ft_windowed(size_t size, int (*window)(size_t size, int count), const char *name)
{
	uint64_t start = ft_now_usec();
	int total = ft.opts.warmup + ft.opts.iterations;
	int max = ft_window();
	for (int done = 0; done < total;) {
		if (done == ft.opts.warmup)
			start = ft_now_usec();
		int phase_end = done < ft.opts.warmup ? ft.opts.warmup : total;
		int count = phase_end - done < max ? phase_end - done : max;
		FT_CHECK(window(size, count));
		done += count;
	}
	ft_show_perf(name, size, ft.opts.iterations, ft_now_usec() - start, 1);
	return 0;
}

int ft_bandwidth(size_t size)
{
	return ft_windowed(size, bandwidth_window, "bw");
}

/* -M: the iterations and warm-ups of one size, so that it moves at most max_bytes. */
static void bound_bytes(size_t size, int iterations, int warmup)
{
	size_t max_bytes = ft.opts.max_bytes_per_size;
	if (!max_bytes)
		return;
	size_t fit = max_bytes / size;
	ft.opts.iterations = fit < 2 ? 2 : fit < (size_t)iterations ? (int)fit : iterations;
	ft.opts.warmup = warmup < ft.opts.iterations ? warmup : ft.opts.iterations;
}

int ft_run_benchmark(int (*loop)(size_t size))
{
	int iterations = ft.opts.iterations, warmup = ft.opts.warmup;
	FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	for (size_t i = 0, size; (size = ft_next_size(i)); i++) {
		bound_bytes(size, iterations, warmup);
		FT_CHECK(ft_oob_sync());
		FT_CHECK(loop(size));
	}
	return 0;
}

int ft_progress_until_match(const void *buf, size_t size, unsigned seed)
{
	uint64_t deadline = ft_now_usec() + (uint64_t)ft.opts.timeout_sec * 1000000;
	while (!ft_buf_matches(buf, size, seed)) {
		struct fi_cq_tagged_entry entry;
		if (ft.rx_cq && fi_cq_read(ft.rx_cq, &entry, 1) == 1)
			ft.rx_done++;
		FT_CHECK(ft_progress());
		if (ft_oob_peer_gone()) {
			FT_ERR("the peer closed the control connection");
			return -FI_ECONNABORTED;
		}
		if (ft_now_usec() > deadline)
			return ft_check_buf(buf, size, seed);  /* reports the first wrong byte */
	}
	return 0;
}

int ft_progress_until_sync(void)
{
	FT_CHECK(ft_progress_until_oob_readable());
	return ft_oob_sync();
}

int ft_progress_until_oob_readable(void)
{
	uint64_t deadline = ft_now_usec() + (uint64_t)ft.opts.timeout_sec * 1000000;
	for (;;) {
		struct pollfd pfd = { .fd = ft.oob_fd, .events = POLLIN };
		if (poll(&pfd, 1, 0) > 0)
			return 0;
		/* Reading the CQs drives the provider's progress engine (manual progress). */
		struct fi_cq_tagged_entry entry;
		if (ft.rx_cq && fi_cq_read(ft.rx_cq, &entry, 1) == 1)
			ft.rx_done++;
		FT_CHECK(ft_progress());
		if (ft_now_usec() > deadline) {
			FT_ERR("timed out waiting for the peer");
			return -FI_ETIMEDOUT;
		}
	}
}
