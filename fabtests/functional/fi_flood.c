/*
 * fi_flood: receiver overrun protection. The client floods the server with many more
 * messages than the server's receive queue holds (small ones and ones above the eager
 * size, alternating), while the server first posts nothing and then posts receives only
 * one at a time. The provider must throttle the sender or buffer what arrives (-FI_EAGAIN
 * on the sender is fine): every message must arrive once, in order, intact.
 */
#include "../common/shared.h"

#include <stddef.h>
#include <time.h>

#define SMALL_LEN 64
#define LARGE_LEN 32768
#define STALL_MS 300

static int count;

static size_t len_of(uint64_t n)
{
	return n % 2 ? LARGE_LEN : SMALL_LEN;
}

static int server(void)
{
	FT_CHECK(ft_oob_sync());
	/* Let the flood pile up against a receiver with nothing posted. */
	struct timespec stall = { 0, STALL_MS * 1000000L };
	nanosleep(&stall, NULL);
	for (int n = 0; n < count; n++) {
		FT_CHECK(ft_post_recv(ft.xfer_max, 0));
		struct fi_cq_tagged_entry entry;
		FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
		ft.rx_done++;
		FT_EXPECT(entry.len == len_of((uint64_t)n), "message %d has %zu bytes, want %zu", n,
			  entry.len, len_of((uint64_t)n));
		if (ft_check_buf(ft_rx_slot((uint64_t)n), entry.len, (unsigned)n)) {
			FT_ERR("message %d lost, reordered or corrupted", n);
			return -FI_EIO;
		}
	}
	return ft_oob_sync();
}

/* Sends complete out of order (small ones at once, large ones when the receiver takes
 * them): a slot is reused only when the completion of its own send came back. */
static bool slot_busy[FT_WINDOW];

static void send_done(void *context)
{
	ptrdiff_t slot = (struct fi_context2 *)context - ft.tx_ctx;
	if (slot >= 0 && slot < FT_WINDOW)
		slot_busy[slot] = false;
}

static int client(void)
{
	FT_EXPECT(ft.slots == FT_WINDOW, "%zu buffer slots", ft.slots);
	ft.on_tx_comp = send_done;
	FT_CHECK(ft_oob_sync());
	for (int n = 0; n < count; n++) {
		size_t slot = ft.tx_posted % FT_WINDOW;
		while (slot_busy[slot])
			FT_CHECK(ft_get_tx_comp(ft.tx_done + 1));
		slot_busy[slot] = true;
		FT_CHECK(ft_post_send(len_of((uint64_t)n), 0));
	}
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	return ft_oob_sync();
}

static int run(void)
{
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Receiver overrun protection.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	/* -I counts windows of messages: the default sends ten times the window. */
	count = ft.opts.iterations * FT_WINDOW;
	ft.opts.verify = true;
	ft.opts.size = LARGE_LEN;
	ft.opts.buf_slots = FT_WINDOW;
	return ft_run(run);
}
