/*
 * fi_tagged: tag matching. The server posts receives for several tags in the reverse of
 * the order the client sends them, plus one receive that matches through ignore bits;
 * every message must land in the receive of its tag, with the sender's tag reported.
 */
#include "../common/shared.h"

#define NUM_TAGS 6
#define SLOT 256
#define WILDCARD_TAG 0x5500
#define WILDCARD_IGNORE 0xff
#define WILDCARD_SENT_TAG 0x55ab

static uint64_t tag_of(int i)
{
	return 0x100 + (uint64_t)i;
}

static int server(void)
{
	/* Receive i uses slot i; the wildcard receive uses slot NUM_TAGS. */
	for (int i = NUM_TAGS - 1; i >= 0; i--) {
		ssize_t ret = fi_trecv(ft.ep, ft.rx_buf + i * SLOT, SLOT, ft.mr_desc, ft.remote_addr,
				       tag_of(i), 0, &ft.rx_ctx[i]);
		if (ret) {
			FT_PRINTERR("fi_trecv", ret);
			return (int)ret;
		}
	}
	ssize_t ret = fi_trecv(ft.ep, ft.rx_buf + NUM_TAGS * SLOT, SLOT, ft.mr_desc, ft.remote_addr,
			       WILDCARD_TAG, WILDCARD_IGNORE, &ft.rx_ctx[NUM_TAGS]);
	if (ret) {
		FT_PRINTERR("fi_trecv", ret);
		return (int)ret;
	}
	FT_CHECK(ft_oob_sync());

	for (int n = 0; n <= NUM_TAGS; n++) {
		struct fi_cq_tagged_entry entry;
		FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
		int slot = (int)((struct fi_context2 *)entry.op_context - ft.rx_ctx);
		FT_EXPECT(slot >= 0 && slot <= NUM_TAGS, "completion with unknown context");
		uint64_t want_tag = slot == NUM_TAGS ? WILDCARD_SENT_TAG : tag_of(slot);
		FT_EXPECT(entry.tag == want_tag, "slot %d reported tag 0x%llx, want 0x%llx", slot,
			  (unsigned long long)entry.tag, (unsigned long long)want_tag);
		FT_EXPECT(entry.flags & FI_TAGGED, "completion lacks FI_TAGGED");
		FT_EXPECT(entry.len == 64 + (size_t)slot, "slot %d length %zu", slot, entry.len);
		FT_CHECK(ft_check_buf(ft.rx_buf + slot * SLOT, entry.len, (unsigned)want_tag));
	}
	return ft_oob_sync();
}

static int send_tagged(uint64_t tag, size_t len)
{
	ft_fill_buf(ft.tx_buf, len, (unsigned)tag);
	FT_CHECK(ft_post_send(len, tag));
	return ft_get_tx_comp(ft.tx_posted);
}

static int client(void)
{
	FT_CHECK(ft_oob_sync());
	for (int i = 0; i < NUM_TAGS; i++)
		FT_CHECK(send_tagged(tag_of(i), 64 + (size_t)i));
	FT_CHECK(send_tagged(WILDCARD_SENT_TAG, 64 + NUM_TAGS));
	return ft_oob_sync();
}

static int run(void)
{
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Tag matching with ignore bits.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_TAGGED;
	ft.opts.size = (NUM_TAGS + 1) * SLOT;
	return ft_run(run);
}
