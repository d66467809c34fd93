/*
 * scale: how long it takes to connect N peers over an RDM provider, and how much resident
 * memory each connected peer costs. Public fi_* API only, so the same binary runs against
 * any libfabric.so.1.
 *
 * usage: scale [-p PROVIDER] [-m] N
 *
 * The program forks a hub process with one endpoint; the parent opens N endpoints in one
 * domain and each sends one message to the hub, which makes the provider connect N peers
 * (rxm connects on first send). Printed (one line):
 *   peers N connect_ms T hub_kb_per_peer H client_kb_per_peer C
 * hub_kb_per_peer: the hub's anonymous RSS growth while N peers connected to it, divided by N
 * (the cost of one more peer for a server or an MPI rank). client_kb_per_peer: the anonymous
 * RSS growth of the parent for opening and connecting its N endpoints, divided by N.
 *
 * -m (a same-host peer that moved): each endpoint sends a second message after both sides
 * kept progressing for MOVE_SETTLE_USEC, so a provider that moves same-host peers to shared
 * memory once connected (ours: tcp;ofi_rxm with FI_OFI_RXM_USE_SHM=1) has done so, and
 * resident shared memory (RssShmem: the segments both processes map) counts beside RssAnon.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>

#define MAX_PEERS 1024
#define TIMEOUT_USEC (60 * 1000000.0)
#define MOVE_SETTLE_USEC (300 * 1000.0)

struct fabric_objs {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
};

static const char *provider = "tcp;ofi_rxm";
static char message[8];
static char recv_bufs[2 * MAX_PEERS][8];
static struct fi_context2 contexts[2 * MAX_PEERS];
static int rounds = 1; /* 2 with -m */

static double now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Anonymous resident memory (heap, mappings) in KiB: what a process holds for its peers.
 * Not VmRSS: that also counts code pages of shared libraries the first time a path runs
 * them, 64 KiB at a time (fault-around), which moved the per-peer figure by up to 4 KiB at
 * N=32 from one run to the next. */
static long rss_kb(void)
{
	char line[256];
	long anon = -1, shmem = 0, kb;
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "RssAnon: %ld kB", &kb) == 1)
			anon = kb;
		else if (sscanf(line, "RssShmem: %ld kB", &kb) == 1)
			shmem = kb;
	}
	fclose(f);
	return rounds > 1 && anon >= 0 ? anon + shmem : anon;
}

#define CHECK(call)                                                                \
	do {                                                                       \
		int ret_ = (int)(call);                                            \
		if (ret_) {                                                        \
			fprintf(stderr, "scale: %s: %s\n", #call, fi_strerror(-ret_)); \
			return ret_ < 0 ? ret_ : -FI_EOTHER;                       \
		}                                                                  \
	} while (0)

static int open_fabric(struct fabric_objs *o)
{
	struct fi_info *hints = fi_allocinfo();
	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG;
	hints->mode = FI_CONTEXT | FI_CONTEXT2;
	hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(provider);
	int ret = fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &o->info);
	fi_freeinfo(hints);
	CHECK(ret);
	CHECK(fi_fabric(o->info->fabric_attr, &o->fabric, NULL));
	CHECK(fi_domain(o->fabric, o->info, &o->domain, NULL));
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	CHECK(fi_av_open(o->domain, &av_attr, &o->av, NULL));
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_CONTEXT, .size = MAX_PEERS * 2 };
	CHECK(fi_cq_open(o->domain, &cq_attr, &o->cq, NULL));
	return 0;
}

static int open_endpoint(struct fabric_objs *o, struct fid_ep **ep)
{
	CHECK(fi_endpoint(o->domain, o->info, ep, NULL));
	CHECK(fi_ep_bind(*ep, &o->av->fid, 0));
	CHECK(fi_ep_bind(*ep, &o->cq->fid, FI_TRANSMIT | FI_RECV));
	CHECK(fi_enable(*ep));
	return 0;
}

/* Reads completions until `count` arrived; reading the CQ also drives manual progress. */
static int wait_completions(struct fid_cq *cq, int count)
{
	double deadline = now_usec() + TIMEOUT_USEC;
	struct fi_cq_entry entries[64];
	while (count > 0) {
		ssize_t n = fi_cq_read(cq, entries, 64);
		if (n > 0) {
			count -= (int)n;
			continue;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(cq, &err, 0);
			fprintf(stderr, "scale: completion error: %s\n", fi_strerror(err.err));
			return -err.err;
		}
		if (n != -FI_EAGAIN)
			return (int)n;
		if (now_usec() > deadline) {
			fprintf(stderr, "scale: timed out with %d completions missing\n", count);
			return -FI_ETIMEDOUT;
		}
	}
	return 0;
}

/* Child: one endpoint that receives one message from each of n peers. */
static int run_hub(int n, int to_parent)
{
	struct fabric_objs o = { 0 };
	struct fid_ep *ep;
	CHECK(open_fabric(&o));
	CHECK(open_endpoint(&o, &ep));
	char name[256];
	size_t name_len = sizeof(name);
	CHECK(fi_getname(&ep->fid, name, &name_len));
	/* The application's own receive buffers and contexts are not the library's memory per
	 * peer: fault their pages in before the baseline (completions write into them). */
	memset(recv_bufs, 0, sizeof(recv_bufs));
	memset(contexts, 0, sizeof(contexts));
	for (int i = 0; i < n * rounds; i++) {
		ssize_t ret;
		while ((ret = fi_recv(ep, recv_bufs[i], sizeof(recv_bufs[i]), NULL, FI_ADDR_UNSPEC,
				      &contexts[i])) == -FI_EAGAIN)
			fi_cq_read(o.cq, NULL, 0);
		CHECK(ret);
	}
	long before = rss_kb();
	if (write(to_parent, &name_len, sizeof(name_len)) != sizeof(name_len) ||
	    write(to_parent, name, name_len) != (ssize_t)name_len)
		return -FI_EIO;
	CHECK(wait_completions(o.cq, n * rounds));
	long delta = rss_kb() - before;
	if (write(to_parent, &delta, sizeof(delta)) != sizeof(delta))
		return -FI_EIO;
	/* Stay until the parent is done, so no peer sees its connection reset early. */
	char done;
	while (read(to_parent, &done, 1) < 0 && errno == EINTR)
		;
	fi_close(&ep->fid);
	fi_close(&o.cq->fid);
	fi_close(&o.av->fid);
	fi_close(&o.domain->fid);
	fi_close(&o.fabric->fid);
	fi_freeinfo(o.info);
	return 0;
}

static int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -FI_EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Parent: n endpoints, each sends one message to the hub. */
static int run_peers(int n, int to_hub)
{
	static struct fid_ep *eps[MAX_PEERS];
	struct fabric_objs o = { 0 };
	size_t name_len;
	char name[256];
	CHECK(read_exact(to_hub, &name_len, sizeof(name_len)));
	if (name_len > sizeof(name))
		return -FI_EINVAL;
	CHECK(read_exact(to_hub, name, name_len));

	long before = rss_kb();
	double start = now_usec();
	CHECK(open_fabric(&o));
	fi_addr_t hub;
	if (fi_av_insert(o.av, name, 1, &hub, 0, NULL) != 1) {
		fprintf(stderr, "scale: fi_av_insert failed\n");
		return -FI_EINVAL;
	}
	for (int i = 0; i < n; i++)
		CHECK(open_endpoint(&o, &eps[i]));
	for (int round = 0; round < rounds; round++) {
		if (round > 0) { /* keep progressing while a same-host peer moves */
			double until = now_usec() + MOVE_SETTLE_USEC;
			while (now_usec() < until)
				fi_cq_read(o.cq, NULL, 0);
		}
		for (int i = 0; i < n; i++) {
			ssize_t ret;
			while ((ret = fi_send(eps[i], message, sizeof(message), NULL, hub,
					      &contexts[round * n + i])) == -FI_EAGAIN)
				fi_cq_read(o.cq, NULL, 0);
			CHECK(ret);
		}
		CHECK(wait_completions(o.cq, n));
	}
	long hub_delta;
	CHECK(read_exact(to_hub, &hub_delta, sizeof(hub_delta)));
	double elapsed_ms = (now_usec() - start) / 1e3;
	long client_delta = rss_kb() - before;
	printf("peers %d connect_ms %.1f hub_kb_per_peer %.1f client_kb_per_peer %.1f\n", n,
	       elapsed_ms, (double)hub_delta / n, (double)client_delta / n);
	fflush(stdout);
	if (write(to_hub, "x", 1) != 1)
		return -FI_EIO;
	for (int i = 0; i < n; i++)
		fi_close(&eps[i]->fid);
	fi_close(&o.cq->fid);
	fi_close(&o.av->fid);
	fi_close(&o.domain->fid);
	fi_close(&o.fabric->fid);
	fi_freeinfo(o.info);
	return 0;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "p:m")) != -1) {
		if (opt == 'm') {
			rounds = 2;
			continue;
		}
		if (opt != 'p') {
			fprintf(stderr, "usage: %s [-p PROVIDER] [-m] N\n", argv[0]);
			return 2;
		}
		provider = optarg;
	}
	int n = optind < argc ? atoi(argv[optind]) : 0;
	if (n < 1 || n > MAX_PEERS) {
		fprintf(stderr, "usage: %s [-p PROVIDER] N (1..%d)\n", argv[0], MAX_PEERS);
		return 2;
	}
	int fds[2];
	/* A socketpair carries the hub's address one way and the figures the other. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds)) {
		perror("socketpair");
		return 1;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("fork");
		return 1;
	}
	if (child == 0) {
		close(fds[0]);
		_exit(run_hub(n, fds[1]) ? 1 : 0);
	}
	close(fds[1]);
	int ret = run_peers(n, fds[0]);
	close(fds[0]);
	int status = 0;
	waitpid(child, &status, 0);
	if (ret || !WIFEXITED(status) || WEXITSTATUS(status))
		return 1;
	return 0;
}
