/* fi_setopt_test: endpoint options, including unknown names and levels. */
#include "../common/ft_unit.h"

static int with_endpoint(int (*body)(struct fid_ep *ep))
{
	/* Options are set on a bound, not yet enabled endpoint, as applications do. */
	struct fid_ep *ep;
	FT_CHECK(ft_unit_open_bound_endpoint(&ep));
	int ret = body(ep);
	fi_close(&ep->fid);
	return ret;
}

static int unknown_name(struct fid_ep *ep)
{
	size_t value = 1;
	int ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, 4242, &value, sizeof(value));
	FT_EXPECT(ret == -FI_ENOPROTOOPT, "fi_setopt of an unknown option returned %d", ret);
	size_t len = sizeof(value);
	ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, 4242, &value, &len);
	FT_EXPECT(ret == -FI_ENOPROTOOPT, "fi_getopt of an unknown option returned %d", ret);
	return 0;
}

static int unknown_level(struct fid_ep *ep)
{
	size_t value = 1;
	int ret = fi_setopt(&ep->fid, 77, FI_OPT_MIN_MULTI_RECV, &value, sizeof(value));
	FT_EXPECT(ret == -FI_ENOPROTOOPT, "fi_setopt at an unknown level returned %d", ret);
	return 0;
}

/* FI_OPT_MIN_MULTI_RECV round trip, where the endpoint supports multi-receive. */
static int min_multi_recv(struct fid_ep *ep)
{
	if (!(ft.info->caps & FI_MULTI_RECV))
		return -FI_ENODATA;
	size_t value = 4096, out = 0, len = sizeof(out);
	int ret = fi_setopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &value,
			    sizeof(value));
	FT_EXPECT(ret == 0, "fi_setopt(FI_OPT_MIN_MULTI_RECV): %d", ret);
	ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &out, &len);
	FT_EXPECT(ret == 0 && out == value && len == sizeof(out),
		  "fi_getopt(FI_OPT_MIN_MULTI_RECV): %d, value %zu", ret, out);
	return 0;
}

/* Connection data size is readable on msg endpoints and bounded by the 1.17 limit. */
static int cm_data_size(struct fid_ep *ep)
{
	if (ft.info->ep_attr->type != FI_EP_MSG)
		return -FI_ENODATA;
	size_t value = 0, len = sizeof(value);
	int ret = fi_getopt(&ep->fid, FI_OPT_ENDPOINT, FI_OPT_CM_DATA_SIZE, &value, &len);
	FT_EXPECT(ret == 0, "fi_getopt(FI_OPT_CM_DATA_SIZE): %d", ret);
	FT_EXPECT(value > 0 && value <= 256, "cm data size %zu", value);
	return 0;
}

static int test_unknown_name(void) { return with_endpoint(unknown_name); }
static int test_unknown_level(void) { return with_endpoint(unknown_level); }
static int test_min_multi_recv(void) { return with_endpoint(min_multi_recv); }
static int test_cm_data_size(void) { return with_endpoint(cm_data_size); }

static const struct ft_unit_case cases[] = {
	{ "setopt_unknown_name", test_unknown_name },
	{ "setopt_unknown_level", test_unknown_level },
	{ "setopt_min_multi_recv", test_min_multi_recv },
	{ "getopt_cm_data_size", test_cm_data_size },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Endpoint options.", cases, FT_UNIT_COUNT(cases), FI_MSG);
}
