/*
 * fi_rma_bw: RMA bandwidth (-o write|read|writedata), a window of operations in flight.
 * Operation n uses buffer slot n on both sides. Write and read are one-sided: the target
 * only drives progress. Writedata's target waits for each window's CQ data (posting a
 * receive per operation when the provider chose FI_RX_CQ_DATA) and acknowledges it.
 * With -v: written data is checked at the target after every window, read data at the
 * initiator, against the pattern of the operation (write) or of the target slot (read).
 */
#include "../common/shared.h"

static uint64_t ops_done;  /* RMA operations of all finished windows, on both sides */

static uint64_t slot_offset(uint64_t n)
{
	return (n % ft.slots) * ft.xfer_max;
}

/* The target sees the written data, with the pattern of each of the window's operations. */
static int check_written(size_t size, int count)
{
	for (uint64_t n = ops_done; n < ops_done + (uint64_t)count; n++)
		FT_CHECK(ft_progress_until_match(ft_rx_slot(n), size, (unsigned)n));
	return 0;
}

static int client_window(size_t size, int count)
{
	for (int i = 0; i < count; i++) {
		uint64_t n = ft.tx_posted;
		if (ft.opts.verify && ft.opts.rma_op != FT_RMA_READ)
			ft_fill_buf(ft_tx_slot(n), size, (unsigned)(ops_done + (uint64_t)i));
		FT_CHECK(ft_post_rma(ft.opts.rma_op, size, slot_offset(ops_done + (uint64_t)i)));
	}
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	if (ft.opts.verify && ft.opts.rma_op == FT_RMA_READ) {
		for (int i = 0; i < count; i++) {
			uint64_t n = ft.tx_posted - (uint64_t)count + (uint64_t)i;
			uint64_t slot = (ops_done + (uint64_t)i) % ft.slots;
			FT_CHECK(ft_check_buf(ft_rx_slot(n), size, (unsigned)slot));
		}
	}
	ops_done += (uint64_t)count;
	if (ft.opts.rma_op == FT_RMA_WRITEDATA)
		return ft_rx(1);  /* the target's acknowledgement */
	/* Written, then checked by the target: only then may the next window overwrite. */
	if (ft.opts.verify && ft.opts.rma_op == FT_RMA_WRITE) {
		FT_CHECK(ft_oob_sync());
		return ft_oob_sync();
	}
	return 0;
}

static int wait_cq_data(size_t size)
{
	uint64_t mask = ft.info->domain_attr->cq_data_size >= 8 ?
		~0ULL : (1ULL << (8 * ft.info->domain_attr->cq_data_size)) - 1;
	struct fi_cq_tagged_entry entry;
	FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
	ft.rx_done++;
	FT_EXPECT(entry.flags & FI_REMOTE_CQ_DATA, "flags 0x%llx lack FI_REMOTE_CQ_DATA",
		  (unsigned long long)entry.flags);
	FT_EXPECT(entry.data == (size & mask), "CQ data 0x%llx, want 0x%llx",
		  (unsigned long long)entry.data, (unsigned long long)(size & mask));
	return 0;
}

/* Only writedata and -v writes get here: the target has something to do per window. */
static int server_window(size_t size, int count)
{
	if (ft.opts.rma_op == FT_RMA_WRITEDATA) {
		bool consume = ft_rx_cq_data();
		/* One receive is always posted already (see ft_run_benchmark). */
		for (int i = 1; consume && i < count; i++)
			FT_CHECK(ft_post_recv(ft.xfer_max, 0));
		for (int i = 0; i < count; i++)
			FT_CHECK(wait_cq_data(size));
		if (consume)
			FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	} else {
		FT_CHECK(ft_progress_until_sync());
	}
	if (ft.opts.verify && ft.opts.rma_op != FT_RMA_READ)
		FT_CHECK(check_written(size, count));
	ops_done += (uint64_t)count;
	if (ft.opts.rma_op == FT_RMA_WRITEDATA)
		return ft_tx(1);
	return ft_oob_sync();  /* checked: the client may go on */
}

static int one_size(size_t size)
{
	if (!ft.server) {
		FT_CHECK(ft_windowed(size, client_window, "rma_bw"));
		return ft_oob_sync();
	}
	bool target_works = ft.opts.rma_op == FT_RMA_WRITEDATA ||
			    (ft.opts.verify && ft.opts.rma_op == FT_RMA_WRITE);
	if (target_works) {
		/* The server's numbers are those of the same windows, seen from the target. */
		FT_CHECK(ft_windowed(size, server_window, "rma_bw(target)"));
	}
	/* Manual progress: the target must keep driving it while the initiator works. */
	return ft_progress_until_sync();
}

static int run(void)
{
	FT_CHECK(ft_exchange_rma_target());
	FT_EXPECT(ft.remote.len >= ft.xfer_max * ft.slots, "peer buffer of %llu bytes too small",
		  (unsigned long long)ft.remote.len);
	/* Reads fetch the target's slots, each filled with its own pattern. */
	if (ft.server && ft.opts.rma_op == FT_RMA_READ)
		for (size_t s = 0; s < ft.slots; s++)
			ft_fill_buf(ft_rx_slot(s), ft.xfer_max, (unsigned)s);
	return ft_run_benchmark(one_size);
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL,
				"RMA bandwidth: write, read or writedata (-o).");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG | FI_RMA;
	if (ft.opts.rma_op == FT_RMA_WRITEDATA)
		ft_want_cq_data();
	if (ft.opts.verify)
		ft.opts.buf_slots = FT_WINDOW;
	return ft_run(run);
}
