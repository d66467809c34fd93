/*
 * fi_rma: RMA write, read and write-with-data (-o write|read|writedata) over every size;
 * the data is verified at the side that did not initiate the transfer (or, for reads, at
 * the initiator), and writedata's remote CQ data is checked at the target.
 */
#include "../common/shared.h"

static uint64_t cq_data_for(size_t size)
{
	return (uint64_t)size ^ 0xabc;
}

/* The client initiates; the server is the target and only drives progress. */
static int client_transfer(size_t size, unsigned seed)
{
	if (ft.opts.rma_op != FT_RMA_READ)
		ft_fill_buf(ft.tx_buf, size, seed);
	FT_CHECK(ft_oob_sync());  /* target ready (and, for reads, filled) */
	if (ft.opts.rma_op == FT_RMA_WRITEDATA) {
		FT_RETRY_POST(fi_writedata(ft.ep, ft.tx_buf, size, ft.mr_desc, cq_data_for(size),
					   ft.remote_addr, ft.remote.addr, ft.remote.key,
					   &ft.tx_ctx[0]), "fi_writedata");
		ft.tx_posted++;
	} else {
		FT_CHECK(ft_post_rma(ft.opts.rma_op, size, 0));
	}
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	if (ft.opts.rma_op == FT_RMA_READ)
		FT_CHECK(ft_check_buf(ft.rx_buf, size, seed));
	return ft_oob_sync();  /* initiator done */
}

static int server_transfer(size_t size, unsigned seed)
{
	if (ft.opts.rma_op == FT_RMA_READ)
		ft_fill_buf(ft.rx_buf, size, seed);
	else
		ft_fill_buf(ft.rx_buf, size, seed + 13);  /* anything but the expected data */
	/* With FI_RX_CQ_DATA the write's CQ data lands in a posted receive (e.g. verbs). */
	if (ft.opts.rma_op == FT_RMA_WRITEDATA && ft_rx_cq_data())
		FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	/* Drive progress while the client posts: rdm connections are set up on demand. */
	FT_CHECK(ft_progress_until_sync());
	if (ft.opts.rma_op == FT_RMA_WRITEDATA) {
		struct fi_cq_tagged_entry entry;
		FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
		FT_EXPECT(entry.flags & FI_REMOTE_CQ_DATA, "flags 0x%llx lack FI_REMOTE_CQ_DATA",
			  (unsigned long long)entry.flags);
		FT_EXPECT(entry.data == cq_data_for(size), "CQ data 0x%llx",
			  (unsigned long long)entry.data);
	}
	/* A write's completion at the initiator may precede its arrival here: keep driving
	 * progress until the data shows up (or the timeout says it never will). */
	if (ft.opts.rma_op != FT_RMA_READ)
		FT_CHECK(ft_progress_until_match(ft.rx_buf, size, seed));
	return ft_progress_until_sync();
}

static int run(void)
{
	FT_CHECK(ft_exchange_rma_target());
	unsigned seed = 0;
	for (size_t i = 0, size; (size = ft_next_size(i)); i++) {
		for (int iter = 0; iter < ft.opts.iterations; iter++, seed++) {
			if (ft.server)
				FT_CHECK(server_transfer(size, seed));
			else
				FT_CHECK(client_transfer(size, seed));
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "RMA write, read and writedata.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG | FI_RMA;
	if (ft.opts.rma_op == FT_RMA_WRITEDATA)
		ft_want_cq_data();
	if (!ft.opts.all_sizes && ft.opts.size == FT_DEFAULT_SIZE)
		ft.opts.size = 4096;
	ft.opts.iterations = ft.opts.iterations > 3 ? 3 : ft.opts.iterations;
	return ft_run(run);
}
