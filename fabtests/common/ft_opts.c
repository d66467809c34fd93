/* Command-line options shared by all fabtests, in the style of libfabric's fabtests. */
#include "shared.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ft_state ft = { .oob_fd = -1, .remote_addr = FI_ADDR_UNSPEC };
static bool verbose_debug;

void ft_debug(const char *fmt, ...)
{
	if (!verbose_debug)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "[debug] ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

int ft_exit_code(int ret)
{
	if (ret == 0)
		return FT_EXIT_PASS;
	if (ret == -FI_ENODATA)
		return FT_EXIT_NODATA;
	if (ret == -FI_ENOSYS)
		return FT_EXIT_NOSYS;
	return FT_EXIT_FAIL;
}

static void usage(const char *prog, const char *description)
{
	printf("Usage: %s [OPTIONS]            start server (or run a unit test)\n", prog);
	printf("       %s [OPTIONS] <server>   connect to the server\n\n%s\n\n", prog,
	       description);
	printf("  -p <provider>   provider name, e.g. tcp or \"tcp;ofi_rxm\"\n");
	printf("  -e <ep_type>    endpoint type: msg|rdm|dgram\n");
	printf("  -d <domain>     domain name\n");
	printf("  -f <fabric>     fabric name\n");
	printf("  -s <address>    source address\n");
	printf("  -B <port>       fabric service the server listens on\n");
	printf("  -P <port>       fabric service the client connects to\n");
	printf("  -E[=<port>]     exchange endpoint names over the OOB socket (port %s)\n",
	       FT_DEFAULT_OOB_PORT);
	printf("  -I <number>     iterations\n");
	printf("  -w <number>     warm-up iterations\n");
	printf("  -S <size|all|list>  transfer size, every size of the test list, or a\n"
	       "                  comma-separated list of sizes run in this order\n");
	printf("  -M <bytes>      with several sizes: fewer iterations (at least 2) and warm-ups\n"
	       "                  for a size so it moves at most this many bytes\n");
	printf("  -F <format>     CQ format: context|msg|data|tagged (default tagged)\n");
	printf("  -v              verify received data\n");
	printf("  -U              request FI_DELIVERY_COMPLETE\n");
	printf("  -o <op>         RMA operation: write|read|writedata\n");
	printf("  -t <type>       completion type: queue|counter\n");
	printf("  -c <method>     completion method: spin|sread|fd|yield\n");
	printf("  -m              machine-readable performance output\n");
	printf("  -T <seconds>    completion timeout (default 10)\n");
	printf("  -h              this help\n");
	printf("Environment: FT_OOB_PORT sets the OOB port, FT_TIMEOUT the default of -T,\n"
	       "FT_DEBUG=1 prints debug output.\n");
	printf("Exit status: 0 pass, %d/%d not run (provider lacks it), %d fail.\n",
	       FT_EXIT_NODATA, FT_EXIT_NOSYS, FT_EXIT_FAIL);
}

static int parse_int(const char *arg, int *out)
{
	char *end;
	errno = 0;
	long v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > 1 << 30)
		return -FI_EINVAL;
	*out = (int)v;
	return 0;
}

/* "1,2,4096": every entry a positive integer, at most FT_MAX_SIZE_LIST of them. */
static int parse_size_list(const char *arg, struct ft_opts *o)
{
	o->size_count = 0;
	for (const char *p = arg;;) {
		char *end;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > 1 << 30 || o->size_count == FT_MAX_SIZE_LIST)
			return -FI_EINVAL;
		o->size_list[o->size_count++] = (size_t)v;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -FI_EINVAL;
		p = end + 1;
	}
}

static int parse_base_option(int c, const char *arg)
{
	struct ft_opts *o = &ft.opts;
	int value;
	switch (c) {
	case 'p': o->prov_name = arg; return 0;
	case 'd': o->domain_name = arg; return 0;
	case 'f': o->fabric_name = arg; return 0;
	case 's': o->src_addr = arg; return 0;
	case 'B': o->src_port = arg; return 0;
	case 'P': o->dst_port = arg; return 0;
	case 'E':
		o->oob_addr_exchange = true;
		if (arg)
			o->oob_port = arg[0] == '=' ? arg + 1 : arg;
		return 0;
	case 'v': o->verify = true; return 0;
	case 'U': o->deliver_complete = true; return 0;
	case 'm': o->machine_readable = true; return 0;
	case 'e':
		if (!strcmp(arg, "msg")) o->ep_type = FI_EP_MSG;
		else if (!strcmp(arg, "rdm")) o->ep_type = FI_EP_RDM;
		else if (!strcmp(arg, "dgram")) o->ep_type = FI_EP_DGRAM;
		else return -FI_EINVAL;
		return 0;
	case 'I': return parse_int(arg, &o->iterations);
	case 'w': return parse_int(arg, &o->warmup);
	case 'T': return parse_int(arg, &o->timeout_sec);
	case 'M':
		if (parse_int(arg, &value) || value == 0)
			return -FI_EINVAL;
		o->max_bytes_per_size = (size_t)value;
		return 0;
	case 'F':
		if (!strcmp(arg, "context")) o->cq_format = FI_CQ_FORMAT_CONTEXT;
		else if (!strcmp(arg, "msg")) o->cq_format = FI_CQ_FORMAT_MSG;
		else if (!strcmp(arg, "data")) o->cq_format = FI_CQ_FORMAT_DATA;
		else if (!strcmp(arg, "tagged")) o->cq_format = FI_CQ_FORMAT_TAGGED;
		else return -FI_EINVAL;
		return 0;
	case 'S':
		if (!strcmp(arg, "all")) {
			o->all_sizes = true;
			return 0;
		}
		if (strchr(arg, ','))
			return parse_size_list(arg, o);
		if (parse_int(arg, &value) || value == 0)
			return -FI_EINVAL;
		o->size = (size_t)value;
		return 0;
	case 'o':
		if (!strcmp(arg, "write")) o->rma_op = FT_RMA_WRITE;
		else if (!strcmp(arg, "read")) o->rma_op = FT_RMA_READ;
		else if (!strcmp(arg, "writedata")) o->rma_op = FT_RMA_WRITEDATA;
		else return -FI_EINVAL;
		return 0;
	case 't':
		if (!strcmp(arg, "queue")) o->comp_type = FT_COMP_QUEUE;
		else if (!strcmp(arg, "counter")) o->comp_type = FT_COMP_COUNTER;
		else return -FI_EINVAL;
		return 0;
	case 'c':
		if (!strcmp(arg, "spin")) o->comp_method = FT_COMP_SPIN;
		else if (!strcmp(arg, "sread")) o->comp_method = FT_COMP_SREAD;
		else if (!strcmp(arg, "fd")) o->comp_method = FT_COMP_FD;
		else if (!strcmp(arg, "yield")) o->comp_method = FT_COMP_YIELD;
		else return -FI_EINVAL;
		return 0;
	default:
		return -FI_EINVAL;
	}
}

/* Fills ft.opts and allocates ft.hints. Returns 1 after -h, 0 to run, <0 on bad usage. */
int ft_parse_args(int argc, char **argv, const char *extra_opts,
		  int (*extra_handler)(int opt, const char *arg), const char *description)
{
	struct ft_opts *o = &ft.opts;
	char optstring[128];
	snprintf(optstring, sizeof(optstring), "%s%s", FT_BASE_OPTS, extra_opts ? extra_opts : "");
	/* A test may pick its default endpoint type before parsing. */
	if (o->ep_type == FI_EP_UNSPEC)
		o->ep_type = FI_EP_RDM;
	o->iterations = 10;
	o->size = FT_DEFAULT_SIZE;
	o->cq_format = FI_CQ_FORMAT_TAGGED;
	/* FT_OOB_PORT lets a runner move the control socket without implying -E. */
	o->oob_port = getenv("FT_OOB_PORT") ? getenv("FT_OOB_PORT") : FT_DEFAULT_OOB_PORT;
	/* FT_TIMEOUT moves the default of -T, e.g. for every test run under emulation. */
	o->timeout_sec = 10;
	if (getenv("FT_TIMEOUT") && (parse_int(getenv("FT_TIMEOUT"), &o->timeout_sec) ||
				     o->timeout_sec == 0))
		o->timeout_sec = 10;
	verbose_debug = getenv("FT_DEBUG") != NULL;

	int c;
	while ((c = getopt(argc, argv, optstring)) != -1) {
		int ret;
		if (c == 'h') {
			usage(argv[0], description);
			return 1;
		}
		if (c == '?') {
			usage(argv[0], description);
			return -FI_EINVAL;
		}
		if (extra_opts && strchr(extra_opts, c) && extra_handler)
			ret = extra_handler(c, optarg);
		else
			ret = parse_base_option(c, optarg);
		if (ret) {
			fprintf(stderr, "invalid value for -%c: %s\n", c, optarg ? optarg : "");
			return -FI_EINVAL;
		}
	}
	if (optind < argc)
		o->dst_addr = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "unexpected argument '%s'\n", argv[optind]);
		return -FI_EINVAL;
	}
	ft.server = o->dst_addr == NULL;

	ft.hints = fi_allocinfo();
	if (!ft.hints)
		return -FI_ENOMEM;
	ft.hints->ep_attr->type = o->ep_type;
	ft.hints->mode = FI_CONTEXT | FI_CONTEXT2;
	ft.hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
					 FI_MR_PROV_KEY;
	if (o->prov_name && !(ft.hints->fabric_attr->prov_name = strdup(o->prov_name)))
		return -FI_ENOMEM;
	if (o->domain_name && !(ft.hints->domain_attr->name = strdup(o->domain_name)))
		return -FI_ENOMEM;
	if (o->fabric_name && !(ft.hints->fabric_attr->name = strdup(o->fabric_name)))
		return -FI_ENOMEM;
	if (o->deliver_complete)
		ft.hints->tx_attr->op_flags |= FI_DELIVERY_COMPLETE;
	return 0;
}
