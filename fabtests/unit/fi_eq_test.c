/* fi_eq_test: event queue write/read, empty reads, blocking reads with timeout, peeking. */
#include "../common/ft_unit.h"

#include <string.h>

static int open_eq(struct fid_eq **eq, enum fi_wait_obj wait_obj)
{
	struct fi_eq_attr attr = { .size = 16, .wait_obj = wait_obj };
	int ret = fi_eq_open(ft.fabric, &attr, eq, NULL);
	if (ret)
		FT_PRINTERR("fi_eq_open", ret);
	return ret;
}

static int test_write_read(void)
{
	struct fid_eq *eq;
	FT_CHECK(open_eq(&eq, FI_WAIT_NONE));
	struct fi_eq_entry in = { .fid = &eq->fid, .context = &in, .data = 0x1234 }, out;
	uint32_t event = 0;
	ssize_t w = fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	ssize_t r = fi_eq_read(eq, &event, &out, sizeof(out), 0);
	fi_close(&eq->fid);
	FT_EXPECT(w == sizeof(in), "fi_eq_write returned %zd", w);
	FT_EXPECT(r == sizeof(out), "fi_eq_read returned %zd", r);
	FT_EXPECT(event == FI_NOTIFY && out.context == &in && out.data == 0x1234 &&
		  out.fid == &eq->fid, "event %u data %llu", event, (unsigned long long)out.data);
	return 0;
}

static int test_empty_read(void)
{
	struct fid_eq *eq;
	FT_CHECK(open_eq(&eq, FI_WAIT_NONE));
	struct fi_eq_entry out;
	uint32_t event;
	ssize_t r = fi_eq_read(eq, &event, &out, sizeof(out), 0);
	fi_close(&eq->fid);
	FT_EXPECT(r == -FI_EAGAIN, "reading an empty EQ returned %zd", r);
	return 0;
}

static int test_sread_timeout(void)
{
	struct fid_eq *eq;
	FT_CHECK(open_eq(&eq, FI_WAIT_UNSPEC));
	struct fi_eq_entry out;
	uint32_t event;
	uint64_t start = ft_now_usec();
	ssize_t r = fi_eq_sread(eq, &event, &out, sizeof(out), 200, 0);
	uint64_t elapsed = ft_now_usec() - start;
	fi_close(&eq->fid);
	FT_EXPECT(r == -FI_EAGAIN, "fi_eq_sread on an empty EQ returned %zd", r);
	FT_EXPECT(elapsed >= 150000 && elapsed < 5000000, "waited %llu usec for 200 ms",
		  (unsigned long long)elapsed);
	return 0;
}

static int test_peek(void)
{
	struct fid_eq *eq;
	FT_CHECK(open_eq(&eq, FI_WAIT_NONE));
	struct fi_eq_entry in = { .fid = &eq->fid, .data = 7 }, out;
	uint32_t event;
	fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0);
	ssize_t first = fi_eq_read(eq, &event, &out, sizeof(out), FI_PEEK);
	ssize_t second = fi_eq_read(eq, &event, &out, sizeof(out), 0);
	ssize_t third = fi_eq_read(eq, &event, &out, sizeof(out), 0);
	fi_close(&eq->fid);
	FT_EXPECT(first == sizeof(out) && second == sizeof(out) && third == -FI_EAGAIN,
		  "peek %zd, read %zd, read again %zd", first, second, third);
	return 0;
}

static int test_order(void)
{
	struct fid_eq *eq;
	FT_CHECK(open_eq(&eq, FI_WAIT_NONE));
	for (uint64_t i = 0; i < 5; i++) {
		struct fi_eq_entry in = { .fid = &eq->fid, .data = i };
		if (fi_eq_write(eq, FI_NOTIFY, &in, sizeof(in), 0) != sizeof(in)) {
			fi_close(&eq->fid);
			FT_EXPECT(false, "write %llu", (unsigned long long)i);
		}
	}
	int result = 0;
	for (uint64_t i = 0; i < 5 && !result; i++) {
		struct fi_eq_entry out;
		uint32_t event;
		if (fi_eq_read(eq, &event, &out, sizeof(out), 0) != sizeof(out) || out.data != i)
			result = -FI_EOTHER;
	}
	fi_close(&eq->fid);
	FT_EXPECT(result == 0, "events came back out of order");
	return 0;
}

static int test_wait_fd(void)
{
	struct fid_eq *eq;
	int ret = open_eq(&eq, FI_WAIT_FD);
	if (ret == -FI_ENOSYS || ret == -FI_EINVAL)
		return -FI_ENOSYS;
	FT_CHECK(ret);
	int fd = -1;
	ret = fi_control(&eq->fid, FI_GETWAIT, &fd);
	fi_close(&eq->fid);
	FT_EXPECT(ret == 0 && fd >= 0, "FI_GETWAIT returned %d, fd %d", ret, fd);
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "eq_write_read", test_write_read },
	{ "eq_empty_read", test_empty_read },
	{ "eq_sread_timeout", test_sread_timeout },
	{ "eq_peek", test_peek },
	{ "eq_fifo_order", test_order },
	{ "eq_wait_fd", test_wait_fd },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Event queues.", cases, FT_UNIT_COUNT(cases), 0);
}
