/*
 * fi_tagged_peek: FI_PEEK, FI_CLAIM and FI_DISCARD on unexpected tagged messages.
 * The client sends three tagged messages while the server posts no receive. The server
 * peeks for a tag never sent (FI_ENOMSG error completion), peeks one message twice (peek
 * does not consume), claims a second with FI_PEEK|FI_CLAIM and fetches it with FI_CLAIM
 * and the same context, discards the third with FI_PEEK|FI_DISCARD, and finally receives
 * the peeked one normally. Claimed and discarded messages must no longer be found.
 */
#include "../common/shared.h"

#define MSG_LEN 100
#define TAG_PEEKED 0x71
#define TAG_CLAIMED 0x72
#define TAG_DISCARDED 0x73
#define TAG_NEVER_SENT 0x7f

/* One peek; 0 with the completion when a match exists, -FI_ENOMSG when none. */
static int peek_once(uint64_t tag, uint64_t flags, struct fi_context2 *ctx,
		     struct fi_cq_tagged_entry *entry)
{
	struct fi_msg_tagged msg = {
		.msg_iov = NULL, .desc = NULL, .iov_count = 0, .addr = ft.remote_addr,
		.tag = tag, .ignore = 0, .context = ctx, .data = 0,
	};
	FT_RETRY_POST(fi_trecvmsg(ft.ep, &msg, flags), "fi_trecvmsg(FI_PEEK)");
	struct fi_cq_err_entry err = { 0 };
	int ret = ft_wait_cq_entry(ft.rx_cq, entry, &err);
	if (ret == -FI_ENOMSG) {
		FT_EXPECT(err.op_context == ctx, "FI_ENOMSG completion for another context");
		return ret;
	}
	if (ret) {
		FT_PRINTERR("peek completion", ret);
		return ret;
	}
	FT_EXPECT(entry->op_context == ctx, "peek completion for another context");
	return 0;
}

/* Messages travel asynchronously: a peek may miss one that is still on its way. */
static int peek_until_found(uint64_t tag, uint64_t flags, struct fi_context2 *ctx)
{
	uint64_t deadline = ft_now_usec() + (uint64_t)ft.opts.timeout_sec * 1000000;
	struct fi_cq_tagged_entry entry;
	int ret;
	while ((ret = peek_once(tag, flags, ctx, &entry)) == -FI_ENOMSG) {
		if (ft_now_usec() > deadline) {
			FT_ERR("message with tag 0x%llx never found by FI_PEEK",
			       (unsigned long long)tag);
			return -FI_ETIMEDOUT;
		}
	}
	FT_CHECK(ret);
	FT_EXPECT(entry.tag == tag, "peek reported tag 0x%llx, want 0x%llx",
		  (unsigned long long)entry.tag, (unsigned long long)tag);
	/* A discarded message's completion may report no length (1.17's rxm says 0). */
	if (!(flags & FI_DISCARD))
		FT_EXPECT(entry.len == MSG_LEN, "peek reported length %zu, want %d", entry.len,
			  MSG_LEN);
	return 0;
}

static int expect_gone(uint64_t tag, const char *why)
{
	struct fi_context2 ctx;
	struct fi_cq_tagged_entry entry;
	int ret = peek_once(tag, FI_PEEK, &ctx, &entry);
	FT_EXPECT(ret == -FI_ENOMSG, "tag 0x%llx %s, yet FI_PEEK returned %d",
		  (unsigned long long)tag, why, ret);
	return 0;
}

static int receive_into(uint64_t tag, uint64_t flags, struct fi_context2 *ctx, char *buf)
{
	struct iovec iov = { buf, MSG_LEN };
	void *desc = ft.mr_desc;
	struct fi_msg_tagged msg = {
		.msg_iov = &iov, .desc = &desc, .iov_count = 1, .addr = ft.remote_addr,
		.tag = tag, .ignore = 0, .context = ctx, .data = 0,
	};
	FT_RETRY_POST(fi_trecvmsg(ft.ep, &msg, flags), "fi_trecvmsg");
	struct fi_cq_tagged_entry entry;
	FT_CHECK(ft_wait_cq_entry(ft.rx_cq, &entry, NULL));
	FT_EXPECT(entry.op_context == ctx, "receive completion for another context");
	FT_EXPECT(entry.tag == tag, "received tag 0x%llx, want 0x%llx",
		  (unsigned long long)entry.tag, (unsigned long long)tag);
	FT_EXPECT(entry.len == MSG_LEN, "received %zu bytes, want %d", entry.len, MSG_LEN);
	return ft_check_buf(buf, MSG_LEN, (unsigned)tag);
}

static int server(void)
{
	struct fi_context2 claim_ctx, discard_ctx, peek_ctx, recv_ctx;
	FT_CHECK(ft_oob_sync());  /* the client starts sending now */

	FT_CHECK(expect_gone(TAG_NEVER_SENT, "was never sent"));
	FT_CHECK(peek_until_found(TAG_PEEKED, FI_PEEK, &peek_ctx));
	FT_CHECK(peek_until_found(TAG_PEEKED, FI_PEEK, &peek_ctx));

	FT_CHECK(peek_until_found(TAG_CLAIMED, FI_PEEK | FI_CLAIM, &claim_ctx));
	FT_CHECK(expect_gone(TAG_CLAIMED, "is claimed"));
	FT_CHECK(receive_into(TAG_CLAIMED, FI_CLAIM, &claim_ctx, ft.rx_buf));

	FT_CHECK(peek_until_found(TAG_DISCARDED, FI_PEEK | FI_DISCARD, &discard_ctx));
	FT_CHECK(expect_gone(TAG_DISCARDED, "was discarded"));

	FT_CHECK(receive_into(TAG_PEEKED, 0, &recv_ctx, ft.rx_buf + MSG_LEN));
	FT_CHECK(expect_gone(TAG_PEEKED, "was received"));
	return ft_oob_sync();
}

static int client(void)
{
	static const uint64_t tags[] = { TAG_PEEKED, TAG_CLAIMED, TAG_DISCARDED };
	/* Sending may need the server's progress (rdm connection setup), which its peeks
	 * drive: start it first. The messages are still unexpected when the peeks run. */
	FT_CHECK(ft_oob_sync());
	for (size_t i = 0; i < 3; i++) {
		char *buf = ft.tx_buf + i * MSG_LEN;
		ft_fill_buf(buf, MSG_LEN, (unsigned)tags[i]);
		FT_RETRY_POST(fi_tsend(ft.ep, buf, MSG_LEN, ft.mr_desc, ft.remote_addr, tags[i],
				       &ft.tx_ctx[i]), "fi_tsend");
		ft.tx_posted++;
	}
	FT_CHECK(ft_get_tx_comp(ft.tx_posted));
	return ft_progress_until_sync();
}

static int run(void)
{
	return ft.server ? server() : client();
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Tagged FI_PEEK, FI_CLAIM, FI_DISCARD.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_TAGGED;
	ft.opts.size = 3 * MSG_LEN;
	return ft_run(run);
}
