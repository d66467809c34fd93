/* fi_cq_test: completion queue formats, empty reads, blocking reads, wait objects. */
#include "../common/ft_unit.h"

static int open_cq(enum fi_cq_format format, enum fi_wait_obj wait_obj, struct fid_cq **cq)
{
	struct fi_cq_attr attr = { .format = format, .wait_obj = wait_obj, .size = 64 };
	return fi_cq_open(ft.domain, &attr, cq, NULL);
}

static int test_formats(void)
{
	static const enum fi_cq_format formats[] = {
		FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG, FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED,
	};
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		struct fid_cq *cq;
		int ret = open_cq(formats[i], FI_WAIT_NONE, &cq);
		FT_EXPECT(ret == 0, "format %d: %d", formats[i], ret);
		FT_EXPECT(fi_close(&cq->fid) == 0, "close");
	}
	return 0;
}

static int test_bad_format(void)
{
	struct fid_cq *cq;
	int ret = open_cq((enum fi_cq_format)77, FI_WAIT_NONE, &cq);
	if (ret == 0)
		fi_close(&cq->fid);
	FT_EXPECT(ret < 0, "an unknown CQ format was accepted");
	return 0;
}

static int test_empty_read(void)
{
	struct fid_cq *cq;
	FT_CHECK(open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, &cq));
	struct fi_cq_entry entry;
	ssize_t r = fi_cq_read(cq, &entry, 1);
	fi_close(&cq->fid);
	FT_EXPECT(r == -FI_EAGAIN, "reading an empty CQ returned %zd", r);
	return 0;
}

static int test_sread_timeout(void)
{
	struct fid_cq *cq;
	FT_CHECK(open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_UNSPEC, &cq));
	struct fi_cq_entry entry;
	uint64_t start = ft_now_usec();
	ssize_t r = fi_cq_sread(cq, &entry, 1, NULL, 200);
	uint64_t elapsed = ft_now_usec() - start;
	fi_close(&cq->fid);
	FT_EXPECT(r == -FI_EAGAIN, "fi_cq_sread on an empty CQ returned %zd", r);
	FT_EXPECT(elapsed >= 150000 && elapsed < 5000000, "waited %llu usec for 200 ms",
		  (unsigned long long)elapsed);
	return 0;
}

static int test_wait_fd(void)
{
	struct fid_cq *cq;
	int ret = open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_FD, &cq);
	if (ret == -FI_ENOSYS)
		return ret;
	FT_EXPECT(ret == 0, "fi_cq_open with FI_WAIT_FD: %d", ret);
	int fd = -1;
	ret = fi_control(&cq->fid, FI_GETWAIT, &fd);
	struct fid *fids[1] = { &cq->fid };
	int trywait = fi_trywait(ft.fabric, fids, 1);
	fi_close(&cq->fid);
	FT_EXPECT(ret == 0 && fd >= 0, "FI_GETWAIT returned %d, fd %d", ret, fd);
	FT_EXPECT(trywait == 0, "fi_trywait on an empty CQ returned %d", trywait);
	return 0;
}

static int test_readerr_empty(void)
{
	struct fid_cq *cq;
	FT_CHECK(open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, &cq));
	struct fi_cq_err_entry err = { 0 };
	ssize_t r = fi_cq_readerr(cq, &err, 0);
	fi_close(&cq->fid);
	FT_EXPECT(r == -FI_EAGAIN, "fi_cq_readerr without errors returned %zd", r);
	return 0;
}

static int test_busy_cq(void)
{
	struct fid_cq *cq;
	struct fid_ep *ep;
	FT_CHECK(open_cq(FI_CQ_FORMAT_CONTEXT, FI_WAIT_NONE, &cq));
	int ret = ft_unit_open_endpoint(&ep);
	if (ret) {
		fi_close(&cq->fid);
		return ret;
	}
	ret = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV);
	int busy = fi_close(&cq->fid);
	fi_close(&ep->fid);
	if (busy)
		fi_close(&cq->fid);
	FT_EXPECT(ret == 0, "fi_ep_bind: %d", ret);
	FT_EXPECT(busy == -FI_EBUSY, "closing a CQ bound to an endpoint returned %d", busy);
	return 0;
}

static const struct ft_unit_case cases[] = {
	{ "cq_formats", test_formats },
	{ "cq_bad_format", test_bad_format },
	{ "cq_empty_read", test_empty_read },
	{ "cq_sread_timeout", test_sread_timeout },
	{ "cq_wait_fd", test_wait_fd },
	{ "cq_readerr_empty", test_readerr_empty },
	{ "cq_close_bound", test_busy_cq },
};

int main(int argc, char **argv)
{
	return ft_unit_main(argc, argv, "Completion queues.", cases, FT_UNIT_COUNT(cases), FI_MSG);
}
