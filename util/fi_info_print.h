/* fi_info: the output formats. */
#ifndef FI_INFO_PRINT_H
#define FI_INFO_PRINT_H

#include <rdma/fabric.h>

/* One block per interface: provider, fabric, domain, version, endpoint type, protocol. */
void fi_info_print_summary(const struct fi_info *info);

/* The full fi_tostr dump of each interface, each preceded by "---"; with a non-NULL
 * 'substr', only the dumps containing it. */
void fi_info_print_verbose(const struct fi_info *info, const char *substr);

/* Provider name and version of each entry. */
void fi_info_print_providers(const struct fi_info *info);

/* The parameters libfabric and its providers read from the environment, optionally only
 * those whose name contains 'substr' (any case). Returns 0 or a negative FI_E* code. */
int fi_info_print_params(const char *substr);

#endif
