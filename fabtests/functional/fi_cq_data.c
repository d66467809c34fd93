/* fi_cq_data: fi_senddata delivers remote CQ data with FI_REMOTE_CQ_DATA at the receiver. */
#include "../common/shared.h"

#define DATA_VALUE 0x5eedf00dULL

static int run(void)
{
	size_t data_size = ft.info->domain_attr->cq_data_size;
	if (data_size < 4) {
		fprintf(stderr, "provider carries only %zu bytes of CQ data (not run)\n", data_size);
		return -FI_ENODATA;
	}
	uint64_t mask = data_size >= 8 ? ~0ULL : (1ULL << (8 * data_size)) - 1;
	for (int i = 0; i < ft.opts.iterations; i++) {
		uint64_t value = (DATA_VALUE + (uint64_t)i) & mask;
		if (ft.server) {
			struct fi_cq_tagged_entry entry;
			FT_CHECK(ft_post_recv(ft.xfer_max, 0));
			FT_CHECK(ft_progress_until_sync());
			FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
			FT_EXPECT(entry.flags & FI_REMOTE_CQ_DATA, "flags 0x%llx lack FI_REMOTE_CQ_DATA",
				  (unsigned long long)entry.flags);
			FT_EXPECT(entry.data == value, "data 0x%llx, want 0x%llx",
				  (unsigned long long)entry.data, (unsigned long long)value);
			FT_EXPECT(entry.len == ft.opts.size, "length %zu", entry.len);
			FT_CHECK(ft_check_buf(ft.rx_buf, entry.len, (unsigned)i));
		} else {
			ft_fill_buf(ft.tx_buf, ft.opts.size, (unsigned)i);
			FT_CHECK(ft_oob_sync());
			FT_RETRY_POST(fi_senddata(ft.ep, ft.tx_buf, ft.opts.size, ft.mr_desc, value,
						  ft.remote_addr, &ft.tx_ctx[0]), "fi_senddata");
			ft.tx_posted++;
			FT_CHECK(ft_get_tx_comp(ft.tx_posted));
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Remote CQ data with fi_senddata.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	ft_want_cq_data();
	return ft_run(run);
}
