/* fi_pingpong: command line, and the ping-pong loop over each message size. */
#include "fi_pingpong.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool pp_verbose;

static const size_t default_sizes[] = { 64, 256, 1024, 4096, 65536, 1048576 };
/* -S all: 0, 1, then 2^k and 2^k + 2^(k-1) for k = 1..22 (up to 6 MiB), as upstream. */
#define PP_ALL_SIZES_MAX_SHIFT 22

static size_t all_size(size_t index)
{
	if (index < 2)
		return index;
	size_t k = 1 + (index - 2) / 2;
	size_t base = (size_t)1 << k;
	return (index - 2) % 2 == 0 ? base : base + base / 2;
}

static size_t all_sizes_count(void)
{
	return 2 + 2 * PP_ALL_SIZES_MAX_SHIFT;
}

size_t pp_max_listed_size(const struct pp_options *opts)
{
	if (opts->all_sizes)
		return all_size(all_sizes_count() - 1);
	return default_sizes[sizeof(default_sizes) / sizeof(default_sizes[0]) - 1];
}

void pp_debug(const char *fmt, ...)
{
	if (!pp_verbose)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "[debug] ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

void pp_error(const char *call, int ret)
{
	fprintf(stderr, "%s(): ret=%d (%s)\n", call, ret, fi_strerror(ret < 0 ? -ret : ret));
}

static void usage(const char *prog)
{
	printf("Usage:\n");
	printf("  %s [OPTIONS]\t\tstart server\n", prog);
	printf("  %s [OPTIONS] <srv_addr>\tconnect to server\n", prog);
	printf("\nPing pong client and server\n\nOptions:\n");
	printf(" %-20s %s\n", "-B <src_port>",
	       "source control port number (server: " PP_DEFAULT_CTRL_PORT ", client: auto)");
	printf(" %-20s %s\n", "-P <dst_port>",
	       "destination control port number (client: " PP_DEFAULT_CTRL_PORT ")");
	printf(" %-20s %s\n", "-d <domain>", "domain name");
	printf(" %-20s %s\n", "-p <provider>", "specific provider name eg tcp, verbs");
	printf(" %-20s %s\n", "-e <ep_type>", "endpoint type: msg|rdm|dgram (dgram)");
	printf(" %-20s %s\n", "-I <number>", "number of iterations (10)");
	printf(" %-20s %s\n", "-S <size>", "specific transfer size or 'all' (all)");
	printf(" %-20s %s\n", "-c", "enables data_integrity checks");
	printf(" %-20s %s\n", "-m <transmit mode>", "transmit mode type: msg|tagged (msg)");
	printf(" %-20s %s\n", "-h", "display this help output");
	printf(" %-20s %s\n", "-v", "enable debugging output");
	printf(" %-20s %s\n", "-6", "use IPv6 address");
}

static bool parse_long(const char *s, long *out)
{
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0)
		return false;
	*out = v;
	return true;
}

/* Returns 0 to run, 1 to exit successfully (help), -FI_EINVAL on bad usage. */
static int parse_args(int argc, char **argv, struct pp_options *o)
{
	long value;
	int c;
	*o = (struct pp_options){ .ep_type = FI_EP_DGRAM, .iterations = PP_DEFAULT_ITERATIONS };
	while ((c = getopt(argc, argv, "B:P:d:p:e:I:S:cm:hv6")) != -1) {
		switch (c) {
		case 'B': o->src_port = optarg; break;
		case 'P': o->dst_port = optarg; break;
		case 'd': o->domain = optarg; break;
		case 'p': o->provider = optarg; break;
		case 'e':
			if (!strcmp(optarg, "msg"))
				o->ep_type = FI_EP_MSG;
			else if (!strcmp(optarg, "rdm"))
				o->ep_type = FI_EP_RDM;
			else if (!strcmp(optarg, "dgram"))
				o->ep_type = FI_EP_DGRAM;
			else {
				fprintf(stderr, "unknown endpoint type '%s' (msg|rdm|dgram)\n", optarg);
				return -FI_EINVAL;
			}
			break;
		case 'I':
			if (!parse_long(optarg, &o->iterations)) {
				fprintf(stderr, "invalid iteration count '%s'\n", optarg);
				return -FI_EINVAL;
			}
			break;
		case 'S':
			if (!strcmp(optarg, "all")) {
				o->size = 0;
				o->all_sizes = true;
			} else if (parse_long(optarg, &value)) {
				o->size = (size_t)value;
			} else {
				fprintf(stderr, "invalid transfer size '%s'\n", optarg);
				return -FI_EINVAL;
			}
			break;
		case 'c': o->check_data = true; break;
		case 'm':
			if (!strcmp(optarg, "tagged"))
				o->tagged = true;
			else if (!strcmp(optarg, "msg"))
				o->tagged = false;
			else {
				fprintf(stderr, "unknown transmit mode '%s' (msg|tagged)\n", optarg);
				return -FI_EINVAL;
			}
			break;
		case 'v': o->verbose = true; break;
		case '6': o->ipv6 = true; break;
		case 'h':
			usage(argv[0]);
			return 1;
		default:
			usage(argv[0]);
			return -FI_EINVAL;
		}
	}
	if (optind < argc)
		o->dst_addr = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return -FI_EINVAL;
	}
	return 0;
}

/* One message size: sync, ping-pong for the iteration count, agree on the ack count, print. */
static int run_size(struct pp_test *t, size_t size)
{
	bool client = t->opts.dst_addr != NULL;
	long acked = 0;
	int ret = pp_ctrl_sync(t);
	if (ret)
		return ret;
	uint64_t start = pp_now_usec();
	for (long i = 0; i < t->opts.iterations; i++) {
		if (client) {
			ret = pp_send(t, size);
			if (!ret)
				ret = pp_recv(t, size);
			if (!ret)
				acked++;
		} else {
			ret = pp_recv(t, size);
			if (!ret)
				ret = pp_send(t, size);
		}
		if (ret)
			return ret;
	}
	uint64_t elapsed = pp_now_usec() - start;
	ret = pp_ctrl_exchange_count(t, &acked);
	if (ret)
		return ret;
	pp_show_perf(size, t->opts.iterations, acked, elapsed);
	return 0;
}

static int run(struct pp_test *t)
{
	int ret = pp_ctrl_open(t);
	if (ret)
		return ret;
	ret = pp_fabric_init(t);
	if (ret)
		return ret;
	/* Listed sizes above the endpoint's max_msg_size are skipped (xfer_max is capped). */
	if (t->opts.size) {
		ret = run_size(t, t->opts.size);
	} else if (t->opts.all_sizes) {
		for (size_t i = 0; !ret && i < all_sizes_count(); i++)
			if (all_size(i) <= t->fab.xfer_max)
				ret = run_size(t, all_size(i));
	} else {
		for (size_t i = 0; !ret && i < sizeof(default_sizes) / sizeof(default_sizes[0]); i++)
			if (default_sizes[i] <= t->fab.xfer_max)
				ret = run_size(t, default_sizes[i]);
	}
	return ret ? ret : pp_finalize(t);
}

int main(int argc, char **argv)
{
	struct pp_test t = { .ctrl_fd = -1 };
	int ret = parse_args(argc, argv, &t.opts);
	if (ret)
		return ret > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	pp_verbose = t.opts.verbose;
	t.fab.remote_addr = FI_ADDR_UNSPEC;

	ret = run(&t);
	pp_fabric_fini(&t);
	pp_ctrl_close(&t);
	/* Like the upstream tool, the exit status is the positive error number. */
	return ret < 0 ? -ret : ret;
}
