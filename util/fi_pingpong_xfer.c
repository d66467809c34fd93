/* Data movement of fi_pingpong: one receive always posted, one send at a time. */
#include "fi_pingpong.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

/* Integrity pattern: each message starts 7 characters further into this alphabet. */
static const char pattern_alphabet[] =
	"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
#define PATTERN_LEN (sizeof(pattern_alphabet) - 1)
#define PATTERN_STEP 7

static void fill_pattern(char *buf, size_t size, unsigned iter)
{
	size_t pos = ((size_t)iter * PATTERN_STEP) % PATTERN_LEN;
	for (size_t i = 0; i < size; i++) {
		buf[i] = pattern_alphabet[pos];
		pos = pos + 1 == PATTERN_LEN ? 0 : pos + 1;
	}
}

static int check_pattern(const char *buf, size_t size, unsigned iter)
{
	size_t pos = ((size_t)iter * PATTERN_STEP) % PATTERN_LEN;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] != pattern_alphabet[pos]) {
			fprintf(stderr, "data check failed: message %u, size %zu, byte %zu\n",
				iter, size, i);
			return -FI_EIO;
		}
		pos = pos + 1 == PATTERN_LEN ? 0 : pos + 1;
	}
	return 0;
}

static int report_cq_error(struct fid_cq *cq)
{
	struct fi_cq_err_entry err = { 0 };
	ssize_t ret = fi_cq_readerr(cq, &err, 0);
	if (ret < 0) {
		pp_error("fi_cq_readerr", (int)ret);
		return (int)ret;
	}
	fprintf(stderr, "completion error: %s (err %d, prov_errno %d: %s)\n",
		fi_strerror(err.err), err.err, err.prov_errno,
		fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	return err.err ? -err.err : -FI_EOTHER;
}

static int poll_cq(struct fid_cq *cq, uint64_t *done)
{
	struct fi_cq_entry entries[8];
	ssize_t n = fi_cq_read(cq, entries, 8);
	if (n > 0) {
		*done += (uint64_t)n;
		return 0;
	}
	if (n == -FI_EAGAIN)
		return 0;
	if (n == -FI_EAVAIL)
		return report_cq_error(cq);
	pp_error("fi_cq_read", (int)n);
	return (int)n;
}

/* Reading both queues drives progress for providers with manual progress. */
static int progress(struct pp_test *t)
{
	int ret = poll_cq(t->fab.tx_cq, &t->fab.tx_done);
	return ret ? ret : poll_cq(t->fab.rx_cq, &t->fab.rx_done);
}

static int wait_until(struct pp_test *t, const uint64_t *done, uint64_t target)
{
	while (*done < target) {
		int ret = progress(t);
		if (ret)
			return ret;
	}
	return 0;
}

int pp_post_recv(struct pp_test *t)
{
	struct pp_fabric *f = &t->fab;
	size_t len = f->tx_buf - f->rx_buf;
	for (;;) {
		ssize_t ret = t->opts.tagged
			? fi_trecv(f->ep, f->rx_buf, len, f->mr_desc, f->remote_addr, PP_TAG, 0,
				   &f->rx_ctx)
			: fi_recv(f->ep, f->rx_buf, len, f->mr_desc, f->remote_addr, &f->rx_ctx);
		if (ret == 0)
			break;
		if (ret != -FI_EAGAIN) {
			pp_error(t->opts.tagged ? "fi_trecv" : "fi_recv", (int)ret);
			return (int)ret;
		}
		if ((ret = progress(t)))
			return (int)ret;
	}
	f->rx_posted++;
	return 0;
}

static int post_send(struct pp_test *t, size_t size, bool inject)
{
	struct pp_fabric *f = &t->fab;
	for (;;) {
		ssize_t ret;
		if (inject)
			ret = t->opts.tagged
				? fi_tinject(f->ep, f->tx_buf, size, f->remote_addr, PP_TAG)
				: fi_inject(f->ep, f->tx_buf, size, f->remote_addr);
		else
			ret = t->opts.tagged
				? fi_tsend(f->ep, f->tx_buf, size, f->mr_desc, f->remote_addr,
					   PP_TAG, &f->tx_ctx)
				: fi_send(f->ep, f->tx_buf, size, f->mr_desc, f->remote_addr,
					  &f->tx_ctx);
		if (ret == 0)
			return 0;
		if (ret != -FI_EAGAIN) {
			pp_error(inject ? "fi_inject" : "fi_send", (int)ret);
			return (int)ret;
		}
		if ((ret = progress(t)))
			return (int)ret;
	}
}

int pp_send(struct pp_test *t, size_t size)
{
	struct pp_fabric *f = &t->fab;
	if (t->opts.check_data)
		fill_pattern(f->tx_buf, size, f->fill_iter++);
	/* Small messages go out by inject, which completes without a CQ entry. */
	if (size < f->info->tx_attr->inject_size)
		return post_send(t, size, true);
	int ret = post_send(t, size, false);
	if (ret)
		return ret;
	f->tx_posted++;
	return wait_until(t, &f->tx_done, f->tx_posted);
}

int pp_recv(struct pp_test *t, size_t size)
{
	struct pp_fabric *f = &t->fab;
	int ret = wait_until(t, &f->rx_done, f->rx_posted);
	if (ret)
		return ret;
	if (t->opts.check_data && (ret = check_pattern(f->rx_buf, size, f->check_iter++)))
		return ret;
	return pp_post_recv(t);
}

/* Both sides say "fin" so neither tears down while the other still has data in flight. */
int pp_finalize(struct pp_test *t)
{
	struct pp_fabric *f = &t->fab;
	memcpy(f->tx_buf, PP_FIN_MSG, sizeof(PP_FIN_MSG));
	int ret = post_send(t, sizeof(PP_FIN_MSG), false);
	if (ret)
		return ret;
	f->tx_posted++;
	ret = wait_until(t, &f->tx_done, f->tx_posted);
	if (!ret)
		ret = wait_until(t, &f->rx_done, f->rx_posted);
	if (!ret && f->info->ep_attr->type == FI_EP_MSG)
		fi_shutdown(f->ep, 0);
	return ret;
}
