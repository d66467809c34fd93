/* fi_cntr_test: counter set/add/read, error values and waiting with a timeout. */
#include "../common/ft_unit.h"

static int open_cntr(enum fi_wait_obj wait_obj, struct fid_cntr **cntr)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = wait_obj };
	int ret = fi_cntr_open(ft.domain, &attr, cntr, NULL);
	if (ret)
		FT_PRINTERR("fi_cntr_open", ret);
	return ret;
}

static int test_set_add_read(void)
{
	struct fid_cntr *c;
	FT_CHECK(open_cntr(FI_WAIT_NONE, &c));
	uint64_t initial = fi_cntr_read(c);
	int r1 = fi_cntr_add(c, 5);
	uint64_t after_add = fi_cntr_read(c);
	int r2 = fi_cntr_set(c, 100);
	uint64_t after_set = fi_cntr_read(c);
	int r3 = fi_cntr_add(c, 1);
	uint64_t last = fi_cntr_read(c);
	fi_close(&c->fid);
	FT_EXPECT(r1 == 0 && r2 == 0 && r3 == 0, "add/set returned %d %d %d", r1, r2, r3);
	FT_EXPECT(initial == 0 && after_add == 5 && after_set == 100 && last == 101,
		  "values %llu %llu %llu %llu", (unsigned long long)initial,
		  (unsigned long long)after_add, (unsigned long long)after_set,
		  (unsigned long long)last);
	return 0;
}

static int test_errors(void)
{
	struct fid_cntr *c;
	FT_CHECK(open_cntr(FI_WAIT_NONE, &c));
	uint64_t initial = fi_cntr_readerr(c);
	fi_cntr_adderr(c, 2);
	uint64_t added = fi_cntr_readerr(c);
	fi_cntr_seterr(c, 9);
	uint64_t set = fi_cntr_readerr(c);
	uint64_t value = fi_cntr_read(c);
	fi_close(&c->fid);
	FT_EXPECT(initial == 0 && added == 2 && set == 9, "error values %llu %llu %llu",
		  (unsigned long long)initial, (unsigned long long)added,
		  (unsigned long long)set);
	FT_EXPECT(value == 0, "error updates changed the success value to %llu",
		  (unsigned long long)value);
	return 0;
}

static int test_wait_satisfied(void)
{
	struct fid_cntr *c;
	FT_CHECK(open_cntr(FI_WAIT_UNSPEC, &c));
	fi_cntr_set(c, 10);
	int ret = fi_cntr_wait(c, 7, 1000);
	fi_close(&c->fid);
	FT_EXPECT(ret == 0, "waiting for a reached threshold returned %d", ret);
	return 0;
}

static int test_wait_timeout(void)
{
	struct fid_cntr *c;
	FT_CHECK(open_cntr(FI_WAIT_UNSPEC, &c));
	uint64_t start = ft_now_usec();
	int ret = fi_cntr_wait(c, 1, 200);
	uint64_t elapsed = ft_now_usec() - start;
	fi_close(&c->fid);
	FT_EXPECT(ret == -FI_ETIMEDOUT, "fi_cntr_wait on an idle counter returned %d", ret);
	FT_EXPECT(elapsed >= 150000 && elapsed < 5000000, "waited %llu usec for 200 ms",
		  (unsigned long long)elapsed);
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "cntr_set_add_read", test_set_add_read },
	{ "cntr_error_values", test_errors },
	{ "cntr_wait_satisfied", test_wait_satisfied },
	{ "cntr_wait_timeout", test_wait_timeout },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Counters.", cases, FT_UNIT_COUNT(cases), 0);
}
