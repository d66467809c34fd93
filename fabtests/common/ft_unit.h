/* A minimal harness for single-process unit tests: a table of named cases. */
#ifndef FT_UNIT_H
#define FT_UNIT_H

#include "shared.h"

struct ft_unit_case {
	const char *name;
	int (*run)(void);
};

/* Runs every case not named in -x case1,case2 (each prints PASS/FAIL/NOTRUN); returns the program's exit status. */
int ft_unit_main(int argc, char **argv, const char *description, const struct ft_unit_case *cases,
		 size_t count, uint64_t caps);
/* Fabric and domain for the info of the last fi_getinfo, opened by ft_unit_main. */
int ft_unit_open_endpoint(struct fid_ep **ep);
/* The same, bound to a CQ (ft.tx_cq) and, when connectionless, an AV (ft.av); not enabled. */
int ft_unit_open_bound_endpoint(struct fid_ep **ep);

#define FT_UNIT_COUNT(cases) (sizeof(cases) / sizeof((cases)[0]))

#endif
