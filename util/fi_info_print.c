#include "util/fi_info_print.h"

#include <rdma/fabric.h>

#include <stdio.h>
#include <string.h>

void fi_info_print_summary(const struct fi_info *info)
{
	for (const struct fi_info *cur = info; cur; cur = cur->next) {
		printf("provider: %s\n", cur->fabric_attr->prov_name);
		printf("    fabric: %s\n", cur->fabric_attr->name);
		printf("    domain: %s\n", cur->domain_attr->name);
		printf("    version: %d.%d\n", FI_MAJOR(cur->fabric_attr->prov_version),
		       FI_MINOR(cur->fabric_attr->prov_version));
		printf("    type: %s\n", fi_tostr(&cur->ep_attr->type, FI_TYPE_EP_TYPE));
		printf("    protocol: %s\n", fi_tostr(&cur->ep_attr->protocol, FI_TYPE_PROTOCOL));
	}
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
		printf("%s:\n", cur->fabric_attr->prov_name);
		printf("    version: %d.%d\n", FI_MAJOR(cur->fabric_attr->prov_version),
		       FI_MINOR(cur->fabric_attr->prov_version));
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
