/* fi_mr_test: memory registration of many sizes, keys, descriptors, iovecs, bad input. */
#include "../common/ft_unit.h"

#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#define MR_ACCESS (FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

static bool provider_keys(void)
{
	return ft.info->domain_attr->mr_mode & FI_MR_PROV_KEY;
}

static int test_sizes(void)
{
	size_t max = 1 << 22;
	char *buf = malloc(max);
	FT_EXPECT(buf != NULL, "malloc");
	int result = 0;
	for (size_t size = 1; size <= max && !result; size <<= 2) {
		struct fid_mr *mr;
		int ret = fi_mr_reg(ft.domain, buf, size, MR_ACCESS, 0, size, 0, &mr, NULL);
		if (ret) {
			FT_ERR("fi_mr_reg of %zu bytes: %d", size, ret);
			result = -FI_EOTHER;
			break;
		}
		if (!provider_keys() && fi_mr_key(mr) != size) {
			FT_ERR("requested key %zu, got %llu", size, (unsigned long long)fi_mr_key(mr));
			result = -FI_EOTHER;
		}
		if (fi_close(&mr->fid))
			result = -FI_EOTHER;
	}
	free(buf);
	return result;
}

static int test_distinct_keys(void)
{
	char buf[2][64] = { { 0 } };
	struct fid_mr *a, *b;
	FT_EXPECT(fi_mr_reg(ft.domain, buf[0], 64, MR_ACCESS, 0, 1, 0, &a, NULL) == 0, "reg a");
	int ret = fi_mr_reg(ft.domain, buf[1], 64, MR_ACCESS, 0, 2, 0, &b, NULL);
	if (ret) {
		fi_close(&a->fid);
		FT_EXPECT(ret == 0, "reg b: %d", ret);
	}
	uint64_t ka = fi_mr_key(a), kb = fi_mr_key(b);
	fi_close(&a->fid);
	fi_close(&b->fid);
	FT_EXPECT(ka != kb, "two registrations share key %llu", (unsigned long long)ka);
	return 0;
}

/* With application-chosen keys, reusing a key that is in use is an error. */
static int test_duplicate_key(void)
{
	if (provider_keys())
		return -FI_ENODATA;
	char buf[2][64] = { { 0 } };
	struct fid_mr *a, *b;
	FT_EXPECT(fi_mr_reg(ft.domain, buf[0], 64, MR_ACCESS, 0, 77, 0, &a, NULL) == 0, "reg");
	int ret = fi_mr_reg(ft.domain, buf[1], 64, MR_ACCESS, 0, 77, 0, &b, NULL);
	if (ret == 0)
		fi_close(&b->fid);
	fi_close(&a->fid);
	FT_EXPECT(ret == -FI_ENOKEY, "registering a key twice returned %d", ret);
	return 0;
}

static int test_regv(void)
{
	char a[100] = { 0 }, b[300] = { 0 };
	struct iovec iov[2] = { { a, sizeof(a) }, { b, sizeof(b) } };
	struct fid_mr *mr;
	int ret = fi_mr_regv(ft.domain, iov, 2, MR_ACCESS, 0, 5, 0, &mr, NULL);
	if (ret == -FI_ENOSYS || ret == -FI_EINVAL) {
		/* Providers may limit iov_count (domain_attr->mr_iov_limit). */
		FT_EXPECT(ft.info->domain_attr->mr_iov_limit < 2, "regv of 2 iovs: %d", ret);
		return -FI_ENOSYS;
	}
	FT_EXPECT(ret == 0, "fi_mr_regv: %d", ret);
	FT_EXPECT(fi_close(&mr->fid) == 0, "close");
	return 0;
}

static int test_regattr(void)
{
	char buf[128] = { 0 };
	struct iovec iov = { buf, sizeof(buf) };
	struct fi_mr_attr attr = { .mr_iov = &iov, .iov_count = 1, .access = MR_ACCESS,
				   .requested_key = 9, .context = buf };
	struct fid_mr *mr;
	int ret = fi_mr_regattr(ft.domain, &attr, 0, &mr);
	FT_EXPECT(ret == 0, "fi_mr_regattr: %d", ret);
	bool context_kept = mr->fid.context == buf;
	fi_close(&mr->fid);
	FT_EXPECT(context_kept, "fid.context not taken from the attributes");
	return 0;
}

static int test_desc(void)
{
	char buf[64] = { 0 };
	struct fid_mr *mr;
	FT_EXPECT(fi_mr_reg(ft.domain, buf, sizeof(buf), MR_ACCESS, 0, 3, 0, &mr, NULL) == 0,
		  "fi_mr_reg");
	void *desc = fi_mr_desc(mr);
	bool local = ft.info->domain_attr->mr_mode & FI_MR_LOCAL;
	fi_close(&mr->fid);
	FT_EXPECT(!local || desc != NULL, "FI_MR_LOCAL provider returned a NULL descriptor");
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "mr_sizes", test_sizes },
	{ "mr_distinct_keys", test_distinct_keys },
	{ "mr_duplicate_requested_key", test_duplicate_key },
	{ "mr_regv", test_regv },
	{ "mr_regattr", test_regattr },
	{ "mr_desc", test_desc },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Memory registration.", cases, FT_UNIT_COUNT(cases),
			    FI_MSG | FI_RMA);
}
