/*
 * fi_msg_epoll: completion queues with FI_WAIT_FD, their fds (FI_GETWAIT) in one epoll
 * set together with the EQ's, and a ping-pong that only sleeps in epoll_wait after
 * fi_trywait said it may. The fd must wake the waiter when a completion arrives: a
 * sleep that lasts the whole timeout fails the test instead of being retried.
 */
#include "../common/shared.h"

#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

static int epfd = -1;
static int wakeups;

static int add_wait_fd(struct fid *fid, const char *what)
{
	int fd;
	int ret = fi_control(fid, FI_GETWAIT, &fd);
	if (ret) {
		FT_PRINTERR(what, ret);
		return ret;
	}
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = fid };
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev)) {
		FT_ERR("epoll_ctl(ADD, %s fd %d) failed", what, fd);
		return -FI_EOTHER;
	}
	return 0;
}

/* Reads one completion of `cq`, sleeping in epoll_wait whenever fi_trywait allows. */
static int epoll_cq_read(struct fid_cq *cq, uint64_t *done)
{
	struct fid *fids[] = { &ft.tx_cq->fid, &ft.rx_cq->fid };
	for (;;) {
		struct fi_cq_tagged_entry entry;
		ssize_t ret = fi_cq_read(cq, &entry, 1);
		if (ret == 1) {
			(*done)++;
			return 0;
		}
		if (ret == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(cq, &err, 0);
			FT_ERR("error completion: %s", fi_strerror(err.err));
			return err.err ? -err.err : -FI_EOTHER;
		}
		if (ret != -FI_EAGAIN) {
			FT_PRINTERR("fi_cq_read", ret);
			return (int)ret;
		}
		ret = fi_trywait(ft.fabric, fids, 2);
		if (ret == -FI_EAGAIN)
			continue;  /* something is pending: read again */
		if (ret) {
			FT_PRINTERR("fi_trywait", ret);
			return (int)ret;
		}
		struct epoll_event ev[4];
		int n = epoll_wait(epfd, ev, 4, ft.opts.timeout_sec * 1000);
		if (n == 0) {
			FT_ERR("epoll_wait slept %d s: the wait fd never signalled a completion",
			       ft.opts.timeout_sec);
			return -FI_ETIMEDOUT;
		}
		if (n < 0) {
			FT_ERR("epoll_wait failed");
			return -FI_EOTHER;
		}
		wakeups++;
	}
}

static int tx(size_t size)
{
	FT_CHECK(ft_post_send(size, 0));
	return epoll_cq_read(ft.tx_cq, &ft.tx_done);
}

static int rx(size_t size)
{
	FT_CHECK(epoll_cq_read(ft.rx_cq, &ft.rx_done));
	FT_CHECK(ft_check_buf(ft_rx_slot(ft.rx_posted - 1), size, (unsigned)(ft.rx_posted - 1)));
	return ft_post_recv(ft.xfer_max, 0);
}

static int run(void)
{
	epfd = epoll_create1(0);
	if (epfd < 0)
		return -FI_EOTHER;
	FT_CHECK(add_wait_fd(&ft.tx_cq->fid, "FI_GETWAIT(tx cq)"));
	FT_CHECK(add_wait_fd(&ft.rx_cq->fid, "FI_GETWAIT(rx cq)"));
	if (ft.info->ep_attr->type == FI_EP_MSG)
		FT_CHECK(add_wait_fd(&ft.eq->fid, "FI_GETWAIT(eq)"));
	FT_CHECK(ft_post_recv(ft.xfer_max, 0));
	for (size_t i = 0, size; (size = ft_next_size(i)); i++) {
		for (int iter = 0; iter < ft.opts.iterations; iter++) {
			if (ft.server) {
				FT_CHECK(rx(size));
				FT_CHECK(tx(size));
			} else {
				FT_CHECK(tx(size));
				FT_CHECK(rx(size));
			}
		}
	}
	ft_debug("%d epoll wake-ups\n", wakeups);
	close(epfd);
	return 0;
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL, "Wait fds of CQs and EQ under epoll.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG;
	ft.opts.verify = true;
	ft.opts.comp_method = FT_COMP_FD;  /* CQs and counters get FI_WAIT_FD */
	return ft_run(run);
}
