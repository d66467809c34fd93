/* Timing and performance output of the benchmarks. */
#include "shared.h"

#include <time.h>

uint64_t ft_now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static const char *format_size(char *out, size_t len, unsigned long long size)
{
	if (size >= 1ULL << 30)
		snprintf(out, len, "%llug", size >> 30);
	else if (size >= 1ULL << 20)
		snprintf(out, len, "%llum", size >> 20);
	else if (size >= 1ULL << 10)
		snprintf(out, len, "%lluk", size >> 10);
	else
		snprintf(out, len, "%llu", size);
	return out;
}

void ft_show_perf(const char *name, size_t size, int iterations, uint64_t elapsed_usec,
		  int xfers_per_iteration)
{
	static bool header_printed;
	unsigned long long bytes = (unsigned long long)iterations * size * xfers_per_iteration;
	double elapsed = elapsed_usec ? (double)elapsed_usec : 1.0;
	double usec_per_xfer = elapsed / iterations / xfers_per_iteration;

	if (ft.opts.machine_readable) {
		/* One YAML-like record per size, easy to grep and parse. usec_xfer and
		 * Mxfers_sec with 4 decimals: at 2, a message rate of 4-5 M/s moved in steps
		 * of ~20% (0.24 vs 0.19 us/xfer, nothing between). */
		printf("---\n- name: %s\n  bytes: %zu\n  iters: %d\n  total: %llu\n"
		       "  time_s: %.6f\n  MB_sec: %.2f\n  usec_xfer: %.4f\n  Mxfers_sec: %.4f\n",
		       name, size, iterations, bytes, elapsed / 1e6, bytes / elapsed,
		       usec_per_xfer, 1.0 / usec_per_xfer);
		fflush(stdout);
		return;
	}
	char a[32], b[32];
	if (!header_printed) {
		printf("%-10s%-8s%-8s%8s %10s%13s%13s\n", "bytes", "iters", "total", "time",
		       "MB/sec", "usec/xfer", "Mxfers/sec");
		header_printed = true;
	}
	printf("%-10s%-8d%-8s%8.2fs%10.2f%13.3f%13.3f\n", format_size(a, sizeof(a), size),
	       iterations, format_size(b, sizeof(b), bytes), elapsed / 1e6, bytes / elapsed,
	       usec_per_xfer, 1.0 / usec_per_xfer);
	fflush(stdout);
}
