/*
 * fi_info: lists the fabric interfaces libfabric offers, optionally narrowed by hints,
 * and the environment variables it reads. Output and options follow the fi_info(1) tool
 * of libfabric 1.17 so that scripts written for it keep working.
 */
#include "util/fi_info_names.h"
#include "util/fi_info_print.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Version of this tool; it ships with the library of the same release. */
#define FI_INFO_TOOL_VERSION "1.17.0"

enum output_kind { OUTPUT_SUMMARY, OUTPUT_VERBOSE, OUTPUT_PROVIDERS, OUTPUT_PARAMS };

struct request {
	const char *node;
	const char *service;
	uint64_t flags;
	struct fi_info *hints;
	bool use_hints;		/* only filtering options make fi_getinfo see the hints */
	bool verbose;
	bool list_providers;
	bool show_params;
	const char *param_filter;
	const char *info_filter;
};

static const struct option long_options[] = {
	{ "help", no_argument, NULL, 'h' },
	{ "src_addr", required_argument, NULL, 's' },
	{ "node", required_argument, NULL, 'n' },
	{ "port", required_argument, NULL, 'P' },
	{ "caps", required_argument, NULL, 'c' },
	{ "mode", required_argument, NULL, 'm' },
	{ "ep_type", required_argument, NULL, 't' },
	{ "domain", required_argument, NULL, 'd' },
	{ "fabric", required_argument, NULL, 'f' },
	{ "addr_format", required_argument, NULL, 'a' },
	{ "provider", required_argument, NULL, 'p' },
	{ "env", no_argument, NULL, 'e' },
	{ "getenv", required_argument, NULL, 'g' },
	{ "info", required_argument, NULL, 'i' },
	{ "list", no_argument, NULL, 'l' },
	{ "verbose", no_argument, NULL, 'v' },
	{ "version", no_argument, NULL, 'V' },
	{ NULL, 0, NULL, 0 }
};

static const char short_options[] = "s:n:P:c:m:t:a:p:d:f:eg:i:lhv";

static void print_usage(const char *program)
{
	static const char *const lines[] = {
		"  -h, --help\t\t\tdisplay this help and exit",
		"  -s, --src_addr=ADDR\t\tsource name or address",
		"  -n, --node=NAME\t\tdest node name or address",
		"  -P, --port=PNUM\t\tport number",
		"  -c, --caps=CAP1|CAP2..\tone or more capabilities: FI_MSG|FI_RMA...",
		"  -m, --mode=MOD1|MOD2..\tone or more modes, default all modes",
		"  -t, --ep_type=EPTYPE\t\tspecify single endpoint type: FI_EP_MSG, FI_EP_DGRAM...",
		"  -d, --domain=DOMAIN\t\tspecify the domain name",
		"  -f, --fabric=FABRIC\t\tspecify the fabric name",
		"  -a, --addr_format=FMT\t\tspecify accepted address format: FI_FORMAT_UNSPEC, FI_SOCKADDR...",
		"  -p, --provider=PROV\t\tspecify provider explicitly",
		"  -e, --env\t\t\tprint libfabric environment variables",
		"  -g, --getenv=SUBSTR\t\tprint libfabric environment variables with substr",
		"  -i, --info=\t\tprint fi_info structures containing substr",
		"  -l, --list\t\t\tlist available libfabric providers",
		"  -v, --verbose\t\t\tverbose output",
		"  --version\t\t\tprint version info and exit",
	};

	printf("Usage: %s\n", program);
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++)
		printf("%s\n", lines[i]);
}

static void print_version(const char *program)
{
	printf("%s: %s\n", program, FI_INFO_TOOL_VERSION);
	printf("libfabric: %s\n", fi_tostr("1", FI_TYPE_VERSION));
	printf("libfabric api: %d.%d\n", FI_MAJOR_VERSION, FI_MINOR_VERSION);
}

/* Hints start out accepting every mode and every modern memory registration mode, so that
 * only the options the user gives narrow the result. */
static struct fi_info *default_hints(void)
{
	struct fi_info *hints = fi_allocinfo();

	if (!hints)
		return NULL;
	hints->mode = ~0ULL;
	hints->domain_attr->mode = ~0ULL;
	hints->domain_attr->mr_mode = ~(FI_MR_BASIC | FI_MR_SCALABLE);
	return hints;
}

/* Replaces a string owned by the hints (fi_freeinfo frees it). */
static int set_hint_string(char **field, const char *value)
{
	char *copy = strdup(value);

	if (!copy)
		return -FI_ENOMEM;
	free(*field);
	*field = copy;
	return 0;
}

/* Applies one option. Returns 0 to go on, 1 to stop with success, or a negative FI_E* code
 * (EXIT_FAILURE stands for a usage error). */
static int apply_option(struct request *req, int opt, const char *arg, const char *program)
{
	struct fi_info *hints = req->hints;

	switch (opt) {
	case 's':
		req->node = arg;
		req->flags |= FI_SOURCE;
		return 0;
	case 'n':
		req->node = arg;
		return 0;
	case 'P':
		req->service = arg;
		return 0;
	case 'c':
		req->use_hints = true;
		return fi_info_parse_caps(arg, &hints->caps);
	case 'm':
		req->use_hints = true;
		hints->mode = 0;
		return fi_info_parse_modes(arg, &hints->mode);
	case 't': {
		int type;
		int ret = fi_info_parse_ep_type(arg, &type);
		req->use_hints = true;
		if (!ret)
			hints->ep_attr->type = (enum fi_ep_type) type;
		return ret;
	}
	case 'a':
		req->use_hints = true;
		return fi_info_parse_addr_format(arg, &hints->addr_format);
	case 'p':
		req->use_hints = true;
		return set_hint_string(&hints->fabric_attr->prov_name, arg);
	case 'd':
		req->use_hints = true;
		return set_hint_string(&hints->domain_attr->name, arg);
	case 'f':
		req->use_hints = true;
		return set_hint_string(&hints->fabric_attr->name, arg);
	case 'e':
		req->show_params = true;
		return 0;
	case 'g':
		req->show_params = true;
		req->param_filter = arg;
		return 0;
	case 'i':
		req->info_filter = arg;
		return 0;
	case 'l':
		req->list_providers = true;
		return 0;
	case 'v':
		req->verbose = true;
		return 0;
	case 'V':
		print_version(program);
		return 1;
	case 'h':
		print_usage(program);
		return -EXIT_FAILURE;
	default:
		/* getopt has already said what was wrong. */
		print_usage(program);
		return -EXIT_FAILURE;
	}
}

static enum output_kind output_kind(const struct request *req)
{
	if (req->show_params)
		return OUTPUT_PARAMS;
	if (req->verbose || req->info_filter)
		return OUTPUT_VERBOSE;
	if (req->list_providers)
		return OUTPUT_PROVIDERS;
	return OUTPUT_SUMMARY;
}

static int run(const struct request *req)
{
	enum output_kind kind = output_kind(req);
	uint64_t flags = req->flags | (req->list_providers ? FI_PROV_ATTR_ONLY : 0);
	struct fi_info *info = NULL;
	int ret;

	/* Even for the parameter listing the providers are queried first: that is when
	 * they define their parameters. */
	ret = fi_getinfo(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), req->node,
			 req->service, flags, req->use_hints ? req->hints : NULL, &info);
	if (ret) {
		fprintf(stderr, "fi_getinfo: %d\n", ret);
		return ret;
	}

	switch (kind) {
	case OUTPUT_PARAMS:
		ret = fi_info_print_params(req->param_filter);
		break;
	case OUTPUT_VERBOSE:
		fi_info_print_verbose(info, req->info_filter);
		break;
	case OUTPUT_PROVIDERS:
		fi_info_print_providers(info);
		break;
	case OUTPUT_SUMMARY:
		fi_info_print_summary(info);
		break;
	}
	fi_freeinfo(info);
	return ret;
}

int main(int argc, char **argv)
{
	struct request req = { 0 };
	int opt;
	int ret = 0;

	req.hints = default_hints();
	if (!req.hints) {
		fprintf(stderr, "fi_info: out of memory\n");
		return EXIT_FAILURE;
	}

	while ((opt = getopt_long(argc, argv, short_options, long_options, NULL)) != -1) {
		ret = apply_option(&req, opt, optarg, argv[0]);
		if (ret)
			break;
	}
	if (!ret)
		ret = run(&req);

	fi_freeinfo(req.hints);
	if (ret == 1)
		return EXIT_SUCCESS;
	return ret < 0 ? -ret : ret;
}
