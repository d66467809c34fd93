/*
 * fi_unexpected_msg: messages that arrive before any receive is posted are kept and
 * delivered, in order and intact, to receives posted later.
 */
#include "../common/shared.h"

#include <unistd.h>

#define NUM_MSGS 8

static size_t msg_size;

static int run(void)
{
	size_t size = msg_size;
	if (!ft.server) {
		for (int i = 0; i < NUM_MSGS; i++) {
			ft_fill_buf(ft.tx_buf + (size_t)i * size, size, (unsigned)i);
			void *ctx = &ft.tx_ctx[i];
			FT_RETRY_POST(fi_send(ft.ep, ft.tx_buf + (size_t)i * size, size, ft.mr_desc,
					      ft.remote_addr, ctx), "fi_send");
			ft.tx_posted++;
		}
		FT_CHECK(ft_oob_sync());
		FT_CHECK(ft_get_tx_comp(ft.tx_posted));
		return ft_oob_sync();
	}
	/* Let the messages arrive while nothing is posted, driving progress meanwhile. */
	FT_CHECK(ft_progress_until_sync());
	for (uint64_t end = ft_now_usec() + 200000; ft_now_usec() < end;) {
		FT_CHECK(ft_progress());
		usleep(1000);
	}
	for (int i = 0; i < NUM_MSGS; i++) {
		struct fi_cq_tagged_entry entry;
		char *buf = ft.rx_buf + (size_t)i * size;
		ssize_t ret = fi_recv(ft.ep, buf, size, ft.mr_desc, ft.remote_addr, &ft.rx_ctx[i]);
		if (ret) {
			FT_PRINTERR("fi_recv", ret);
			return (int)ret;
		}
		FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
		FT_EXPECT(entry.op_context == &ft.rx_ctx[i], "message %d completed another receive", i);
		FT_EXPECT(entry.len == size, "message %d length %zu", i, entry.len);
		FT_CHECK(ft_check_buf(buf, size, (unsigned)i));
	}
	return ft_oob_sync();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Unexpected messages.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	msg_size = ft.opts.size;
	ft.opts.size = msg_size * NUM_MSGS;
	return ft_run(run);
}
