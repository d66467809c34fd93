/*
 * fi_multi_recv: one FI_MULTI_RECV buffer takes several messages, each completion points
 * into the buffer, and the buffer is released (FI_MULTI_RECV flag) once less than
 * FI_OPT_MIN_MULTI_RECV bytes remain.
 */
#include "../common/shared.h"

#include <sys/uio.h>

#define MSG_SIZE 1024
#define NUM_MSGS 4

static int server(void)
{
	size_t min = MSG_SIZE;
	int ret = fi_setopt(&ft.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min, sizeof(min));
	if (ret) {
		FT_PRINTERR("fi_setopt(FI_OPT_MIN_MULTI_RECV)", ret);
		return ret;
	}
	struct iovec iov = { ft.rx_buf, (size_t)MSG_SIZE * NUM_MSGS };
	void *desc = ft.mr_desc;
	struct fi_msg msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
			      .addr = ft.remote_addr, .context = &ft.rx_ctx[0] };
	ssize_t posted = fi_recvmsg(ft.ep, &msg, FI_MULTI_RECV);
	if (posted) {
		FT_PRINTERR("fi_recvmsg(FI_MULTI_RECV)", posted);
		return (int)posted;
	}
	FT_CHECK(ft_oob_sync());

	int messages = 0;
	bool released = false;
	char *next = ft.rx_buf;
	while (!released) {
		struct fi_cq_tagged_entry entry;
		FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
		FT_EXPECT(entry.op_context == &ft.rx_ctx[0], "completion for another context");
		if (entry.flags & FI_MULTI_RECV)
			released = true;
		if (!(entry.flags & FI_RECV) || entry.len == 0)
			continue;
		FT_EXPECT(messages < NUM_MSGS, "more messages than sent");
		FT_EXPECT(entry.len == MSG_SIZE, "message %d has length %zu", messages, entry.len);
		FT_EXPECT(entry.buf == next, "message %d at offset %td, expected %td", messages,
			  (char *)entry.buf - ft.rx_buf, next - ft.rx_buf);
		FT_CHECK(ft_check_buf(entry.buf, entry.len, (unsigned)messages));
		next += entry.len;
		messages++;
	}
	FT_EXPECT(messages == NUM_MSGS, "buffer released after %d of %d messages", messages,
		  NUM_MSGS);
	return ft_oob_sync();
}

static int client(void)
{
	FT_CHECK(ft_oob_sync());
	for (int i = 0; i < NUM_MSGS; i++) {
		ft_fill_buf(ft.tx_buf, MSG_SIZE, (unsigned)i);
		FT_CHECK(ft_post_send(MSG_SIZE, 0));
		FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	}
	return ft_oob_sync();
}

static int run(void)
{
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Multi-receive buffers.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG | FI_MULTI_RECV;
	ft.opts.size = (size_t)MSG_SIZE * NUM_MSGS;
	return ft_run(run);
}
