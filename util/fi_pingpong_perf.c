/* Timing and the performance table of fi_pingpong (same columns as upstream's). */
#include "fi_pingpong.h"

#include <stdio.h>
#include <time.h>

uint64_t pp_now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Byte sizes with a binary unit: 1536 -> "1.5k"; one decimal only below 10 units. */
static const char *format_size(char *out, size_t len, unsigned long long size)
{
	static const struct { unsigned long long base; const char *unit; } units[] = {
		{ 1ULL << 30, "g" }, { 1ULL << 20, "m" }, { 1ULL << 10, "k" }, { 1, "" },
	};
	size_t u = 0;
	while (size < units[u].base && units[u].base > 1)
		u++;
	unsigned long long whole = size / units[u].base;
	unsigned long long tenths = whole < 10 ? (size % units[u].base) * 10 / units[u].base : 0;
	if (tenths)
		snprintf(out, len, "%llu.%llu%s", whole, tenths, units[u].unit);
	else
		snprintf(out, len, "%llu%s", whole, units[u].unit);
	return out;
}

/* Counts with a decimal unit, truncated: 1500 -> "1k". */
static const char *format_count(char *out, size_t len, long long count)
{
	if (count >= 1000000000)
		snprintf(out, len, "%lldb", count / 1000000000);
	else if (count >= 1000000)
		snprintf(out, len, "%lldm", count / 1000000);
	else if (count >= 1000)
		snprintf(out, len, "%lldk", count / 1000);
	else
		snprintf(out, len, "%lld", count);
	return out;
}

void pp_show_perf(size_t size, long sent, long acked, uint64_t elapsed_usec)
{
	static bool header_printed;
	char a[32], b[32];
	if (sent <= 0)
		return;
	if (!header_printed) {
		printf("%-8s%-8s%-9s%-8s%8s %10s%13s%13s\n", "bytes", "#sent", "#ack", "total",
		       "time", "MB/sec", "usec/xfer", "Mxfers/sec");
		header_printed = true;
	}
	/* Every iteration moves two messages: the ping and the pong. */
	unsigned long long bytes = (unsigned long long)sent * size * 2;
	double elapsed = elapsed_usec ? (double)elapsed_usec : 1.0;
	double usec_per_xfer = elapsed / (double)sent / 2.0;
	printf("%-8s", format_size(a, sizeof(a), size));
	printf("%-8s", format_count(a, sizeof(a), sent));
	/* '=' when every ping was answered, otherwise the sign and size of the difference. */
	if (acked == sent)
		printf("=%-8s", format_count(b, sizeof(b), acked));
	else if (acked > sent)
		printf("-%-8s", format_count(b, sizeof(b), acked - sent));
	else
		printf("+%-8s", format_count(b, sizeof(b), sent - acked));
	printf("%-8s", format_size(a, sizeof(a), bytes));
	printf("%8.2fs%10.2f%11.2f%11.2f\n", elapsed / 1000000.0, (double)bytes / elapsed,
	       usec_per_xfer, 1.0 / usec_per_xfer);
	fflush(stdout);
}
