/* fi_getinfo_test: what fi_getinfo returns for good and bad hints. */
#include "../common/ft_unit.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef bool (*info_check)(const struct fi_info *info, const struct fi_info *hints);

/* fi_getinfo with a copy of the suite's hints, adjusted by `tweak`, then checks each result. */
static int getinfo_with(void (*tweak)(struct fi_info *), const char *node, const char *service,
			uint64_t flags, info_check check, int expected_ret)
{
	struct fi_info *hints = fi_dupinfo(ft.hints), *infos = NULL;
	FT_EXPECT(hints != NULL, "fi_dupinfo");
	if (tweak)
		tweak(hints);
	int ret = fi_getinfo(FT_API_VERSION, node, service, flags, hints, &infos);
	if (ret != expected_ret) {
		FT_ERR("fi_getinfo returned %d (%s), expected %d", ret, fi_strerror(-ret),
		       expected_ret);
		fi_freeinfo(hints);
		fi_freeinfo(infos);
		return -FI_EOTHER;
	}
	int result = 0;
	for (struct fi_info *i = infos; i && check && !result; i = i->next)
		if (!check(i, hints)) {
			FT_ERR("info from %s does not match the hints",
			       i->fabric_attr ? i->fabric_attr->prov_name : "?");
			result = -FI_EOTHER;
		}
	fi_freeinfo(hints);
	fi_freeinfo(infos);
	return result;
}

/* Every ';'-separated component of the requested name appears in the returned name, so
 * asking for "tcp" may also return "tcp;ofi_rxm" (a utility provider over tcp). */
static bool same_provider(const struct fi_info *info, const struct fi_info *hints)
{
	const char *want = hints->fabric_attr->prov_name;
	const char *got = info->fabric_attr->prov_name;
	while (want && *want) {
		size_t len = strcspn(want, ";");
		bool found = false;
		for (const char *g = got; g && *g; g += strcspn(g, ";"), g += *g == ';') {
			size_t glen = strcspn(g, ";");
			if (glen == len && strncasecmp(g, want, len) == 0)
				found = true;
		}
		if (!found)
			return false;
		want += len;
		want += *want == ';';
	}
	return true;
}

static bool has_caps(const struct fi_info *info, const struct fi_info *hints)
{
	return (info->caps & hints->caps) == hints->caps && same_provider(info, hints);
}

static bool mode_allowed(const struct fi_info *info, const struct fi_info *hints)
{
	return (info->mode & ~hints->mode) == 0;
}

static bool same_ep_type(const struct fi_info *info, const struct fi_info *hints)
{
	return info->ep_attr->type == hints->ep_attr->type;
}

static int test_provider_name(void)
{
	return getinfo_with(NULL, NULL, NULL, 0, same_provider, 0);
}

static void want_msg_caps(struct fi_info *h) { h->caps = FI_MSG; }
static int test_caps(void)
{
	return getinfo_with(want_msg_caps, NULL, NULL, 0, has_caps, 0);
}

static int test_mode_subset(void)
{
	return getinfo_with(NULL, NULL, NULL, 0, mode_allowed, 0);
}

static int test_ep_type(void)
{
	return getinfo_with(NULL, NULL, NULL, 0, same_ep_type, 0);
}

static void unknown_provider(struct fi_info *h)
{
	free(h->fabric_attr->prov_name);
	h->fabric_attr->prov_name = strdup("no_such_provider");
}
static int test_unknown_provider(void)
{
	return getinfo_with(unknown_provider, NULL, NULL, 0, NULL, -FI_ENODATA);
}

static void unknown_domain(struct fi_info *h)
{
	free(h->domain_attr->name);
	h->domain_attr->name = strdup("no_such_domain_42");
}
static int test_unknown_domain(void)
{
	return getinfo_with(unknown_domain, NULL, NULL, 0, NULL, -FI_ENODATA);
}

static void impossible_caps(struct fi_info *h) { h->caps = FI_MSG | FI_TRIGGER; }
static int test_unsupported_caps(void)
{
	return getinfo_with(impossible_caps, NULL, NULL, 0, NULL, -FI_ENODATA);
}

static void sockaddr_in_format(struct fi_info *h) { h->addr_format = FI_SOCKADDR_IN; }
static bool is_sockaddr_in(const struct fi_info *info, const struct fi_info *hints)
{
	(void)hints;
	return info->addr_format == FI_SOCKADDR_IN;
}
static int test_addr_format(void)
{
	return getinfo_with(sockaddr_in_format, NULL, NULL, 0, is_sockaddr_in, 0);
}

/* The IPv4 address the node/service cases asked for (loopback unless test_source picks the
 * provider's own source address). */
static struct in_addr expected_addr = { .s_addr = 0 };

static bool port_is(const void *addr, size_t len, uint16_t port)
{
	const struct sockaddr_in *sin = addr;
	return addr && len >= sizeof(*sin) && sin->sin_family == AF_INET &&
	       ntohs(sin->sin_port) == port && sin->sin_addr.s_addr == expected_addr.s_addr;
}
static bool dest_is_22190(const struct fi_info *info, const struct fi_info *hints)
{
	(void)hints;
	return port_is(info->dest_addr, info->dest_addrlen, 22190);
}
static bool src_is_22191(const struct fi_info *info, const struct fi_info *hints)
{
	(void)hints;
	return port_is(info->src_addr, info->src_addrlen, 22191);
}
static int test_node_service(void)
{
	expected_addr.s_addr = htonl(INADDR_LOOPBACK);
	return getinfo_with(sockaddr_in_format, "127.0.0.1", "22190", 0, dest_is_22190, 0);
}
/* A local address the provider can use: its own first IPv4 source address (verbs only
 * knows the addresses of RDMA devices), else the loopback address. */
static int test_source(void)
{
	char node[INET_ADDRSTRLEN] = "127.0.0.1";
	const struct sockaddr_in *sin = ft.info ? ft.info->src_addr : NULL;
	if (sin && ft.info->src_addrlen >= sizeof(*sin) && sin->sin_family == AF_INET)
		inet_ntop(AF_INET, &sin->sin_addr, node, sizeof(node));
	inet_pton(AF_INET, node, &expected_addr);
	return getinfo_with(sockaddr_in_format, node, "22191", FI_SOURCE, src_is_22191, 0);
}

/* fi_getinfo(3): an info matches hints whose caps are a subset of its own. Every subset of
 * the caps the provider reported for the suite's hints must therefore find it again: all
 * subsets when the provider has at most 12 cap bits, else every subset of up to 3 bits and
 * every set missing at most 2 of them (both ends, where combination rules live). */
static int caps_subset_found(const struct fi_info *base, uint64_t caps)
{
	struct fi_info *hints = fi_dupinfo(ft.hints), *infos = NULL;
	FT_EXPECT(hints != NULL, "fi_dupinfo");
	hints->caps = caps;
	hints->ep_attr->type = base->ep_attr->type;
	free(hints->fabric_attr->prov_name);
	hints->fabric_attr->prov_name = strdup(base->fabric_attr->prov_name);
	int ret = fi_getinfo(FT_API_VERSION, NULL, NULL, 0, hints, &infos);
	bool found = false;
	for (struct fi_info *i = infos; i; i = i->next)
		found = found || ((i->caps & caps) == caps && same_provider(i, hints));
	fi_freeinfo(hints);
	fi_freeinfo(infos);
	if (!found) {
		char *str = fi_tostr(&caps, FI_TYPE_CAPS);
		FT_ERR("%s: caps %s (a subset of its own) find nothing: %d (%s)",
		       base->fabric_attr->prov_name, str ? str : "?", ret, fi_strerror(-ret));
		return -FI_EOTHER;
	}
	return 0;
}

static int test_caps_every_subset(void)
{
	FT_EXPECT(ft.info != NULL, "no info for the suite's hints");
	uint64_t bit[64];
	int nbits = 0;
	for (int b = 0; b < 64; b++)
		if (ft.info->caps & (1ULL << b))
			bit[nbits++] = 1ULL << b;
	FT_EXPECT(nbits > 0, "the provider reports no caps");
	bool all = nbits <= 12;
	int tried = 0;
	for (uint64_t pick = 1; pick < (1ULL << (all ? nbits : 20)) && nbits <= 20; pick++) {
		int n = __builtin_popcountll(pick);
		if (!all && n > 3 && n < nbits - 2)
			continue;
		if (pick >> nbits)
			break;
		uint64_t caps = 0;
		for (int b = 0; b < nbits; b++)
			if (pick & (1ULL << b))
				caps |= bit[b];
		if (caps_subset_found(ft.info, caps))
			return -FI_EOTHER;
		tried++;
	}
	FT_EXPECT(nbits <= 20, "more cap bits than this walk covers");
	printf("# %s: %d subsets of %d cap bits found\n", ft.info->fabric_attr->prov_name,
	       tried, nbits);
	return 0;
}

static int test_dupinfo(void)
{
	struct fi_info *copy = fi_dupinfo(ft.info);
	FT_EXPECT(copy != NULL, "fi_dupinfo returned NULL");
	bool same = copy->caps == ft.info->caps && copy->mode == ft.info->mode &&
		    copy->ep_attr->type == ft.info->ep_attr->type &&
		    copy->domain_attr != ft.info->domain_attr &&
		    strcmp(copy->domain_attr->name, ft.info->domain_attr->name) == 0 &&
		    strcmp(copy->fabric_attr->prov_name, ft.info->fabric_attr->prov_name) == 0 &&
		    copy->src_addrlen == ft.info->src_addrlen &&
		    (!copy->src_addr || copy->src_addr != ft.info->src_addr);
	fi_freeinfo(copy);
	FT_EXPECT(same, "duplicate differs from the original or shares its memory");
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "getinfo_provider_name", test_provider_name },
	{ "getinfo_caps_subset", test_caps },
	{ "getinfo_caps_every_subset", test_caps_every_subset },
	{ "getinfo_mode_within_hints", test_mode_subset },
	{ "getinfo_ep_type", test_ep_type },
	{ "getinfo_unknown_provider", test_unknown_provider },
	{ "getinfo_unknown_domain", test_unknown_domain },
	{ "getinfo_unsupported_caps", test_unsupported_caps },
	{ "getinfo_addr_format", test_addr_format },
	{ "getinfo_node_service_dest", test_node_service },
	{ "getinfo_source_flag", test_source },
	{ "dupinfo", test_dupinfo },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "fi_getinfo with good and bad hints.", cases,
			    FT_UNIT_COUNT(cases), 0);
}
