/*
 * fi_rma_bad_key: RMA with a key the target never issued, or outside the registered
 * region, must fail with an error completion at the initiator (never touch memory, crash
 * or hang). The target's memory must be unchanged.
 */
#include "../common/shared.h"

#include <string.h>
#include <sys/uio.h>

static int expect_error_completion(const char *what)
{
	struct fi_cq_err_entry err;
	memset(&err, 0, sizeof(err));
	int ret = ft_wait_cq_entry(ft.tx_cq, NULL, &err);
	FT_EXPECT(ret < 0 && ret != -FI_ETIMEDOUT,
		  "%s: expected an error completion, got %d", what, ret);
	FT_EXPECT(err.err != 0, "%s: error completion with err 0", what);
	ft_debug("%s failed as expected: %s\n", what, fi_strerror(err.err));
	return 0;
}

static int attempt(enum ft_rma_op op, uint64_t key, uint64_t offset, size_t len,
		   const char *what)
{
	/* Delivery-complete makes the target's verdict part of the initiator's completion;
	 * a transmit-complete write could complete before the target sees the bad key. */
	struct iovec iov = { op == FT_RMA_READ ? ft.rx_buf : ft.tx_buf, len };
	void *desc = ft.mr_desc;
	struct fi_rma_iov rma = { ft.remote.addr + offset, len, key };
	struct fi_msg_rma msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
				  .addr = ft.remote_addr, .rma_iov = &rma, .rma_iov_count = 1,
				  .context = &ft.tx_ctx[0] };
	ssize_t ret;
	do {
		ret = op == FT_RMA_READ ? fi_readmsg(ft.ep, &msg, FI_COMPLETION) :
		      fi_writemsg(ft.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE);
		if (ret == -FI_EAGAIN)
			FT_CHECK(ft_progress());
	} while (ret == -FI_EAGAIN);
	ft.tx_posted++;
	if (ret == -FI_EINVAL || ret == -FI_EKEYREJECTED || ret == -FI_EACCES) {
		/* Refusing at post time is also a correct answer. */
		ft.tx_posted--;
		return 0;
	}
	FT_CHECK(ret);
	return expect_error_completion(what);
}

static int client(void)
{
	ft_fill_buf(ft.tx_buf, ft.xfer_max, 1);
	uint64_t bad_key = ft.remote.key + 0x10001;
	FT_CHECK(attempt(FT_RMA_WRITE, bad_key, 0, 64, "write with a bad key"));
	FT_CHECK(attempt(FT_RMA_READ, bad_key, 0, 64, "read with a bad key"));
	FT_CHECK(attempt(FT_RMA_WRITE, ft.remote.key, ft.remote.len * 4, 64,
			 "write beyond the region"));
	FT_CHECK(attempt(FT_RMA_READ, ft.remote.key, ft.remote.len * 4, 64,
			 "read beyond the region"));
	return ft_oob_sync();
}

static int server(void)
{
	memset(ft.rx_buf, 'z', ft.xfer_max);
	FT_CHECK(ft_progress_until_sync());
	for (size_t i = 0; i < ft.xfer_max; i++)
		FT_EXPECT(ft.rx_buf[i] == 'z', "target memory changed at byte %zu", i);
	return 0;
}

static int run(void)
{
	FT_CHECK(ft_exchange_rma_target());
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "RMA with bad keys and bad ranges.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG | FI_RMA;
	ft.opts.size = 4096;
	return ft_run(run);
}
