/* fi_info: turning the names given on the command line into hint values. */
#ifndef FI_INFO_NAMES_H
#define FI_INFO_NAMES_H

#include <stdint.h>

/* Each returns 0 and ORs/stores the value, or -FI_EINVAL after printing which name was
 * not understood. Names are matched without regard to case; lists are '|'-separated. */
int fi_info_parse_caps(const char *list, uint64_t *caps);
int fi_info_parse_modes(const char *list, uint64_t *mode);
int fi_info_parse_ep_type(const char *name, int *ep_type);
int fi_info_parse_addr_format(const char *name, uint32_t *addr_format);

#endif
