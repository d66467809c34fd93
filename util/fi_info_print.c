#include "util/fi_info_print.h"

#include <rdma/fabric.h>

#include <stdio.h>
#include <string.h>

/* fi_getinfo always fills the attributes; a missing one prints as "(null)" rather than
 * taking the tool down. */
static const char *or_null(const char *text)
{
	return text ? text : "(null)";
}

static void print_summary_entry(const struct fi_info *info)
{
	const struct fi_fabric_attr *fabric = info->fabric_attr;
	const struct fi_domain_attr *domain = info->domain_attr;
	const struct fi_ep_attr *ep = info->ep_attr;

	printf("provider: %s\n", or_null(fabric ? fabric->prov_name : NULL));
	printf("    fabric: %s\n", or_null(fabric ? fabric->name : NULL));
	printf("    domain: %s\n", or_null(domain ? domain->name : NULL));
	if (fabric)
		printf("    version: %d.%d\n", FI_MAJOR(fabric->prov_version),
		       FI_MINOR(fabric->prov_version));
	else
		printf("    version: (null)\n");
	printf("    type: %s\n", or_null(ep ? fi_tostr(&ep->type, FI_TYPE_EP_TYPE) : NULL));
	printf("    protocol: %s\n",
	       or_null(ep ? fi_tostr(&ep->protocol, FI_TYPE_PROTOCOL) : NULL));
}

void fi_info_print_summary(const struct fi_info *info)
{
	for (const struct fi_info *cur = info; cur; cur = cur->next)
		print_summary_entry(cur);
}

void fi_info_print_verbose(const struct fi_info *info, const char *substr)
{
	for (const struct fi_info *cur = info; cur; cur = cur->next) {
		const char *text = fi_tostr(cur, FI_TYPE_INFO);
		if (!text || (substr && !strstr(text, substr)))
			continue;
		printf("---\n%s", text);
	}
}

void fi_info_print_providers(const struct fi_info *info)
{
	for (const struct fi_info *cur = info; cur; cur = cur->next) {
		const struct fi_fabric_attr *fabric = cur->fabric_attr;
		if (!fabric)
			continue;
		printf("%s:\n", or_null(fabric->prov_name));
		printf("    version: %d.%d\n", FI_MAJOR(fabric->prov_version),
		       FI_MINOR(fabric->prov_version));
	}
}

static const char *param_type_name(enum fi_param_type type)
{
	switch (type) {
	case FI_PARAM_STRING:
		return "String";
	case FI_PARAM_INT:
		return "Integer";
	case FI_PARAM_BOOL:
		return "Boolean (0/1, on/off, true/false, yes/no)";
	case FI_PARAM_SIZE_T:
		return "size_t";
	}
	return "Unknown";
}

/*
 * A set value is shown as NAME=VALUE, quoted when it contains a space so it can be pasted
 * into a shell. The reference tool writes a NUL byte where no quote is needed; scripts
 * comparing outputs depend on that, so it is kept.
 */
static void print_param_value(const struct fi_param *param)
{
	char quote = strchr(param->value, ' ') ? '"' : '\0';

	fputs(param->name, stdout);
	putchar('=');
	putchar(quote);
	fputs(param->value, stdout);
	putchar(quote);
	putchar('\n');
}

int fi_info_print_params(const char *substr)
{
	struct fi_param *params = NULL;
	int count = 0;
	int ret = fi_getparams(&params, &count);

	if (ret)
		return ret;
	for (int i = 0; i < count; i++) {
		const struct fi_param *param = &params[i];
		if (substr && !strcasestr(param->name, substr))
			continue;
		printf("# %s: %s\n", param->name, param_type_name(param->type));
		printf("# %s\n", param->help_string);
		if (param->value)
			print_param_value(param);
		printf("\n");
	}
	fi_freeparams(params);
	return 0;
}
