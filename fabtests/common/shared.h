/*
 * Shared pieces of the fabtests suite: option parsing, out-of-band (OOB) control socket,
 * resource setup, completion waiting and performance output.
 *
 * Every test is a standalone program that uses only the public fi_* API. Exit status:
 *   0   pass
 *   61  not run: the provider does not offer what the test needs (FI_ENODATA)
 *   38  not run: the provider does not implement an operation the test needs (FI_ENOSYS)
 *   1   fail (anything else)
 * Client/server tests run as two processes: the server has no address argument, the client
 * gets the server's host as its last argument. Both meet on the OOB socket first.
 */
#ifndef FT_SHARED_H
#define FT_SHARED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#define FT_EXIT_PASS 0
#define FT_EXIT_NODATA 61
#define FT_EXIT_NOSYS 38
#define FT_EXIT_FAIL 1

#define FT_API_VERSION FI_VERSION(1, 17)
#define FT_DEFAULT_OOB_PORT "9228"
#define FT_DEFAULT_SIZE 64
#define FT_MAX_ALL_SIZE (1 << 20)
#define FT_WINDOW 64           /* operations a bandwidth test keeps in flight */
#define FT_CM_DATA_MAX 256
#define FT_SLOTS_BYTES_MAX (8 << 20) /* cap of slots * xfer_max per direction */
#define FT_MAX_SIZE_LIST 64    /* sizes one -S a,b,c list may name */

enum ft_comp_method { FT_COMP_SPIN, FT_COMP_SREAD, FT_COMP_FD, FT_COMP_YIELD };
enum ft_comp_type { FT_COMP_QUEUE, FT_COMP_COUNTER };
enum ft_rma_op { FT_RMA_WRITE, FT_RMA_READ, FT_RMA_WRITEDATA };

struct ft_opts {
	const char *prov_name;
	const char *domain_name;
	const char *fabric_name;
	enum fi_ep_type ep_type;
	const char *src_addr;
	const char *dst_addr;      /* NULL on the server */
	const char *src_port;      /* fabric service the server listens on */
	const char *dst_port;      /* fabric service the client connects to */
	const char *oob_port;
	bool oob_addr_exchange;    /* -E: endpoint names travel over the OOB socket */
	int iterations;
	int warmup;
	size_t size;
	bool all_sizes;
	/* -S a,b,c: these sizes in this order, in one process pair (cheap sweeps where
	 * starting a pair is slow, e.g. under emulation). */
	size_t size_list[FT_MAX_SIZE_LIST];
	int size_count;
	/* -M: per size, iterations and warm-up shrink so that one size moves at most this
	 * many bytes (at least 2 iterations); 0 keeps -I and -w for every size. */
	size_t max_bytes_per_size;
	/* -F: the CQ format (tagged by default; some providers refuse it on msg endpoints). */
	enum fi_cq_format cq_format;
	bool verify;
	bool deliver_complete;
	bool machine_readable;
	enum ft_rma_op rma_op;
	enum ft_comp_type comp_type;
	enum ft_comp_method comp_method;
	int timeout_sec;           /* give up waiting for a completion after this long */
	size_t buf_slots;          /* a test asks for this many transfer buffers per direction */
};

/* Where a peer's registered memory lives, exchanged over the OOB socket for RMA. */
struct ft_rma_target {
	uint64_t addr;
	uint64_t key;
	uint64_t len;
};

struct ft_state {
	struct ft_opts opts;
	struct fi_info *hints;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *tx_cq, *rx_cq;
	struct fid_cntr *tx_cntr, *rx_cntr;
	struct fid_av *av;
	struct fid_mr *mr;
	void *mr_desc;
	char *buf;
	char *rx_buf, *tx_buf;
	size_t xfer_max;           /* size of one buffer slot */
	size_t slots;              /* rx_buf and tx_buf each hold this many slots of xfer_max */
	uint64_t tx_seq;           /* messages sent (send or inject): the -v seed of the next */
	fi_addr_t remote_addr;
	uint64_t tx_posted, tx_done;
	uint64_t rx_posted, rx_done;
	struct fi_context2 tx_ctx[FT_WINDOW];
	struct fi_context2 rx_ctx[FT_WINDOW];
	/* Called with the context of every send completion ft_comp.c consumes, for tests
	 * that must know which operation completed (completions may come out of order). */
	void (*on_tx_comp)(void *context);
	struct ft_rma_target remote;
	int oob_fd;
	bool server;
	/* Connection data for the cm_data test: what we send, and what the peer sent us. */
	const void *cm_send_data;
	size_t cm_send_len;
	char cm_recv_data[FT_CM_DATA_MAX];
	size_t cm_recv_len;
};

extern struct ft_state ft;

/* Failure reporting: every message names the test step that failed. */
#define FT_ERR(fmt, ...) \
	fprintf(stderr, "[error] %s:%d: " fmt "\n", __FILE__, __LINE__, ##__VA_ARGS__)
#define FT_PRINTERR(call, ret) \
	FT_ERR("%s: ret=%d (%s)", call, (int)(ret), fi_strerror((int)-(ret)))
/* Checks a test expectation; on failure reports it and returns -FI_EOTHER from the caller. */
#define FT_EXPECT(cond, fmt, ...)                                                \
	do {                                                                     \
		if (!(cond)) {                                                   \
			FT_ERR("expectation failed: %s: " fmt, #cond, ##__VA_ARGS__); \
			return -FI_EOTHER;                                       \
		}                                                                \
	} while (0)
#define FT_CHECK(expr)                     \
	do {                               \
		int ft_ret_ = (int)(expr); \
		if (ft_ret_)               \
			return ft_ret_;    \
	} while (0)

/* Posts with `call` until the provider accepts it; returns from the caller on errors, driving progress on -FI_EAGAIN. */
#define FT_RETRY_POST(call, what)                                      \
	do {                                                     \
		uint64_t deadline_ = ft_now_usec() +             \
			(uint64_t)ft.opts.timeout_sec * 1000000; \
		for (;;) {                                       \
			ssize_t ret_ = (call);                   \
			if (ret_ == 0)                           \
				break;                           \
			if (ret_ != -FI_EAGAIN) {                \
				FT_PRINTERR(what, ret_);         \
				return (int)ret_;                \
			}                                        \
			if (ft_now_usec() > deadline_) {         \
				FT_ERR("%s: stuck on -FI_EAGAIN", what); \
				return -FI_ETIMEDOUT;            \
			}                                        \
			FT_CHECK(ft_progress());                 \
		}                                                \
	} while (0)

/* ft_opts.c */
#define FT_BASE_OPTS "p:e:d:f:s:B:P:E::I:w:S:vUo:t:c:mT:M:F:h"
int ft_parse_args(int argc, char **argv, const char *extra_opts,
		  int (*extra_handler)(int opt, const char *arg), const char *description);
int ft_exit_code(int ret);
void ft_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ft_oob.c */
int ft_oob_open(void);
void ft_oob_close(void);
int ft_oob_send(const void *buf, size_t len);
int ft_oob_recv(void *buf, size_t len);
int ft_oob_sync(void);
int ft_oob_agree(int my_ret);
int ft_oob_exchange(const void *mine, void *theirs, size_t len);
/* True once the peer closed the OOB socket, e.g. because it failed or could not run. */
bool ft_oob_peer_gone(void);

/* ft_setup.c */
/* Hints for remote CQ data (senddata/writedata): 4 bytes of data, and FI_RX_CQ_DATA
 * accepted, so a provider whose CQ data consumes a posted receive (verbs) can match. */
void ft_want_cq_data(void);
/* True when the provider chose FI_RX_CQ_DATA: each remote CQ data needs a posted receive. */
bool ft_rx_cq_data(void);
int ft_getinfo(void);
int ft_open_fabric(void);
int ft_open_domain_res(void);
int ft_init_fabric(void);
int ft_exchange_rma_target(void);
int ft_finalize(void);
void ft_close_all(void);
/* Closes every fabric object and ft.info, keeping the hints and the OOB socket. */
void ft_close_fabric_res(void);
/* Waits on ft.eq for a connection event; a FI_CONNREQ's info replaces ft.info. */
int ft_wait_cm_event(uint32_t expected);
/* Endpoint names over the OOB socket: length and address format, then the name. */
int ft_send_name(struct fid *fid);
int ft_recv_name(void **name, size_t *len, uint32_t *format);
int ft_run(int (*test)(void));

/* ft_comp.c */
int ft_wait_cq_entry(struct fid_cq *cq, struct fi_cq_tagged_entry *entry,
		     struct fi_cq_err_entry *err_out);
int ft_get_tx_comp(uint64_t target);
int ft_get_rx_comp(uint64_t target);

/* ft_xfer.c */
int ft_post_send(size_t size, uint64_t tag);
int ft_post_recv(size_t size, uint64_t tag);
int ft_post_inject(size_t size, uint64_t tag);
int ft_post_rma(enum ft_rma_op op, size_t size, uint64_t remote_offset);
/* Slot n % ft.slots of the transfer buffers: message n uses it. */
char *ft_tx_slot(uint64_t n);
char *ft_rx_slot(uint64_t n);
/* Operations a bandwidth loop keeps in flight: FT_WINDOW, or fewer when -v needs a slot each. */
int ft_window(void);
int ft_tx(size_t size);
int ft_rx(size_t size);
void ft_fill_buf(void *buf, size_t size, unsigned seed);
int ft_check_buf(const void *buf, size_t size, unsigned seed);
size_t ft_next_size(size_t index);   /* 0 when past the last size to test */
int ft_progress(void);

/* ft_bench.c: the measured loops of the benchmarks; print one perf line per size. */
int ft_pingpong(size_t size);
int ft_bandwidth(size_t size);
/* The windowed loop behind ft_bandwidth (and the RMA bandwidth): warm-up, clock, output. */
int ft_windowed(size_t size, int (*window)(size_t size, int count), const char *name);
int ft_run_benchmark(int (*loop)(size_t size));
/* Server side: keep driving progress until the client's next ft_oob_sync. */
int ft_progress_until_sync(void);
/* The same, until the peer sends anything on the OOB socket (left unread). */
int ft_progress_until_oob_readable(void);
/* Drives progress until buf holds pattern `seed` (e.g. the target of an RMA write). */
int ft_progress_until_match(const void *buf, size_t size, unsigned seed);
bool ft_buf_matches(const void *buf, size_t size, unsigned seed);

/* ft_perf.c */
uint64_t ft_now_usec(void);
void ft_show_perf(const char *name, size_t size, int iterations, uint64_t elapsed_usec,
		  int xfers_per_iteration);

#endif
