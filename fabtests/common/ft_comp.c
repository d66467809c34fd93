/* Waiting for completions with the method chosen by -c (spin|sread|fd|yield) and -t. */
#include "shared.h"

#include <poll.h>
#include <sched.h>
#include <string.h>

#define FT_WAIT_SLICE_MS 100

/* A peer that gave up will never send what we wait for: notice it instead of timing out. */
static bool peer_gone_check(void)
{
	static uint64_t next_check;
	uint64_t now = ft_now_usec();
	if (now < next_check)
		return false;
	next_check = now + 50000;
	if (!ft_oob_peer_gone())
		return false;
	FT_ERR("the peer closed the control connection (it failed or could not run)");
	return true;
}

static int report_cq_error(struct fid_cq *cq, struct fi_cq_err_entry *err_out)
{
	struct fi_cq_err_entry err;
	memset(&err, 0, sizeof(err));
	ssize_t ret = fi_cq_readerr(cq, &err, 0);
	if (ret < 0) {
		FT_PRINTERR("fi_cq_readerr", ret);
		return (int)ret;
	}
	if (err_out) {
		*err_out = err;
	} else {
		FT_ERR("error completion: %s (err %d, prov_errno %d: %s)", fi_strerror(err.err),
		       err.err, err.prov_errno,
		       fi_cq_strerror(cq, err.prov_errno, err.err_data, NULL, 0));
	}
	return err.err ? -err.err : -FI_EOTHER;
}

/* One attempt to read an entry, blocking at most a short slice for sread/fd. */
static ssize_t read_once(struct fid_cq *cq, struct fi_cq_tagged_entry *entry)
{
	switch (ft.opts.comp_method) {
	case FT_COMP_SREAD:
		return fi_cq_sread(cq, entry, 1, NULL, FT_WAIT_SLICE_MS);
	case FT_COMP_FD: {
		ssize_t ret = fi_cq_read(cq, entry, 1);
		if (ret != -FI_EAGAIN)
			return ret;
		int fd;
		int rc = fi_control(&cq->fid, FI_GETWAIT, &fd);
		if (rc)
			return rc;
		struct fid *fids[1] = { &cq->fid };
		/* Sleep on the fd only when the provider says nothing is pending. */
		if (fi_trywait(ft.fabric, fids, 1) == FI_SUCCESS) {
			struct pollfd pfd = { .fd = fd, .events = POLLIN };
			poll(&pfd, 1, FT_WAIT_SLICE_MS);
		}
		return fi_cq_read(cq, entry, 1);
	}
	case FT_COMP_YIELD: {
		ssize_t ret = fi_cq_read(cq, entry, 1);
		if (ret == -FI_EAGAIN)
			sched_yield();
		return ret;
	}
	default:
		return fi_cq_read(cq, entry, 1);
	}
}

int ft_wait_cq_entry(struct fid_cq *cq, struct fi_cq_tagged_entry *entry,
		     struct fi_cq_err_entry *err_out)
{
	struct fi_cq_tagged_entry scratch;
	if (!entry)
		entry = &scratch;
	uint64_t deadline = ft_now_usec() + (uint64_t)ft.opts.timeout_sec * 1000000;
	for (;;) {
		ssize_t ret = read_once(cq, entry);
		if (ret == 1)
			return 0;
		if (ret == -FI_EAVAIL)
			return report_cq_error(cq, err_out);
		if (ret != -FI_EAGAIN && ret != 0) {
			FT_PRINTERR("fi_cq_read", ret);
			return (int)ret;
		}
		if (peer_gone_check())
			return -FI_ECONNABORTED;
		if (ft_now_usec() > deadline) {
			FT_ERR("timed out after %d s waiting for a completion", ft.opts.timeout_sec);
			return -FI_ETIMEDOUT;
		}
	}
}

static int wait_counter(struct fid_cntr *cntr, uint64_t target)
{
	uint64_t deadline = ft_now_usec() + (uint64_t)ft.opts.timeout_sec * 1000000;
	for (;;) {
		if (fi_cntr_readerr(cntr) > 0) {
			FT_ERR("counter reports %llu failed operations",
			       (unsigned long long)fi_cntr_readerr(cntr));
			return -FI_EIO;
		}
		if (fi_cntr_read(cntr) >= target)
			return 0;
		if (ft.opts.comp_method == FT_COMP_SREAD || ft.opts.comp_method == FT_COMP_FD) {
			int ret = fi_cntr_wait(cntr, target, FT_WAIT_SLICE_MS);
			if (ret && ret != -FI_ETIMEDOUT && ret != -FI_EAVAIL) {
				FT_PRINTERR("fi_cntr_wait", ret);
				return ret;
			}
		} else if (ft.opts.comp_method == FT_COMP_YIELD) {
			sched_yield();
		}
		if (peer_gone_check())
			return -FI_ECONNABORTED;
		if (ft_now_usec() > deadline) {
			FT_ERR("timed out waiting for counter to reach %llu (at %llu)",
			       (unsigned long long)target, (unsigned long long)fi_cntr_read(cntr));
			return -FI_ETIMEDOUT;
		}
	}
}

int ft_get_tx_comp(uint64_t target)
{
	if (ft.tx_cntr) {
		FT_CHECK(wait_counter(ft.tx_cntr, target));
		ft.tx_done = target;
		return 0;
	}
	while (ft.tx_done < target) {
		struct fi_cq_tagged_entry entry;
		FT_CHECK(ft_wait_cq_entry(ft.tx_cq, &entry, NULL));
		ft.tx_done++;
		if (ft.on_tx_comp)
			ft.on_tx_comp(entry.op_context);
	}
	return 0;
}

int ft_get_rx_comp(uint64_t target)
{
	if (ft.rx_cntr) {
		FT_CHECK(wait_counter(ft.rx_cntr, target));
		ft.rx_done = target;
		return 0;
	}
	while (ft.rx_done < target) {
		FT_CHECK(ft_wait_cq_entry(ft.rx_cq, NULL, NULL));
		ft.rx_done++;
	}
	return 0;
}

/* Drives progress without consuming anything the caller waits for. */
int ft_progress(void)
{
	struct fi_cq_tagged_entry entry;
	if (ft.tx_cq) {
		ssize_t ret = fi_cq_read(ft.tx_cq, &entry, 1);
		if (ret == 1) {
			ft.tx_done++;
			if (ft.on_tx_comp)
				ft.on_tx_comp(entry.op_context);
		} else if (ret == -FI_EAVAIL)
			return report_cq_error(ft.tx_cq, NULL);
	}
	if (ft.tx_cntr)
		(void)fi_cntr_read(ft.tx_cntr);
	return 0;
}
