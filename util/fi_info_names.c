/*
 * The names fi_info accepts. They are a fixed subset of what fi_tostr prints: options that
 * only make sense per operation (FI_INJECT, ...) and newer capability and address names
 * are not taken, so the same command line selects the same interfaces as the reference tool.
 */
#include "util/fi_info_names.h"

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct named_value {
	const char *name;
	uint64_t value;
};

#define NAMED(x) { #x, x }

static const struct named_value cap_names[] = {
	NAMED(FI_MSG), NAMED(FI_RMA), NAMED(FI_TAGGED), NAMED(FI_ATOMIC),
	NAMED(FI_MULTICAST), NAMED(FI_COLLECTIVE), NAMED(FI_READ), NAMED(FI_WRITE),
	NAMED(FI_RECV), NAMED(FI_SEND), NAMED(FI_REMOTE_READ), NAMED(FI_REMOTE_WRITE),
	NAMED(FI_MULTI_RECV), NAMED(FI_REMOTE_CQ_DATA), NAMED(FI_MORE), NAMED(FI_PEEK),
	NAMED(FI_TRIGGER), NAMED(FI_FENCE), NAMED(FI_SOURCE_ERR), NAMED(FI_LOCAL_COMM),
	NAMED(FI_REMOTE_COMM), NAMED(FI_SHARED_AV), NAMED(FI_RMA_EVENT), NAMED(FI_SOURCE),
	NAMED(FI_NAMED_RX_CTX), NAMED(FI_DIRECTED_RECV), NAMED(FI_HMEM),
	{ NULL, 0 }
};

static const struct named_value mode_names[] = {
	NAMED(FI_CONTEXT), NAMED(FI_MSG_PREFIX), NAMED(FI_ASYNC_IOV), NAMED(FI_RX_CQ_DATA),
	NAMED(FI_LOCAL_MR), NAMED(FI_NOTIFY_FLAGS_ONLY), NAMED(FI_RESTRICTED_COMP),
	NAMED(FI_CONTEXT2),
	{ NULL, 0 }
};

static const struct named_value ep_type_names[] = {
	NAMED(FI_EP_UNSPEC), NAMED(FI_EP_MSG), NAMED(FI_EP_DGRAM), NAMED(FI_EP_RDM),
	NAMED(FI_EP_SOCK_STREAM), NAMED(FI_EP_SOCK_DGRAM),
	{ NULL, 0 }
};

static const struct named_value addr_format_names[] = {
	NAMED(FI_FORMAT_UNSPEC), NAMED(FI_SOCKADDR), NAMED(FI_SOCKADDR_IN),
	NAMED(FI_SOCKADDR_IN6), NAMED(FI_SOCKADDR_IB), NAMED(FI_ADDR_PSMX),
	NAMED(FI_ADDR_GNI), NAMED(FI_ADDR_BGQ), NAMED(FI_ADDR_MLX), NAMED(FI_ADDR_STR),
	NAMED(FI_ADDR_PSMX2), NAMED(FI_ADDR_EFA),
	{ NULL, 0 }
};

#undef NAMED

static const struct named_value *lookup(const struct named_value *table, const char *name)
{
	for (; table->name; table++) {
		if (!strcasecmp(table->name, name))
			return table;
	}
	return NULL;
}

static int unrecognized(const char *what, const char *name)
{
	fprintf(stderr, "error: Unrecognized %s: %s\n", what, name);
	return -FI_EINVAL;
}

/* Empty items ("A||B", a leading or trailing '|') are skipped. */
static int parse_list(const struct named_value *table, const char *what, const char *list,
		      uint64_t *bits)
{
	char *copy = strdup(list);
	char *save = NULL;
	int ret = 0;

	if (!copy)
		return -FI_ENOMEM;
	for (char *item = strtok_r(copy, "|", &save); item; item = strtok_r(NULL, "|", &save)) {
		const struct named_value *entry = lookup(table, item);
		if (!entry) {
			ret = unrecognized(what, item);
			break;
		}
		*bits |= entry->value;
	}
	free(copy);
	return ret;
}

int fi_info_parse_caps(const char *list, uint64_t *caps)
{
	return parse_list(cap_names, "capability", list, caps);
}

int fi_info_parse_modes(const char *list, uint64_t *mode)
{
	return parse_list(mode_names, "mode", list, mode);
}

int fi_info_parse_ep_type(const char *name, int *ep_type)
{
	const struct named_value *entry = lookup(ep_type_names, name);
	if (!entry)
		return unrecognized("endpoint type", name);
	*ep_type = (int) entry->value;
	return 0;
}

int fi_info_parse_addr_format(const char *name, uint32_t *addr_format)
{
	const struct named_value *entry = lookup(addr_format_names, name);
	if (!entry)
		return unrecognized("address format", name);
	*addr_format = (uint32_t) entry->value;
	return 0;
}
