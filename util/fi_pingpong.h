/*
 * fi_pingpong: a quick check that two processes can move data over a provider.
 *
 * The tool speaks the same out-of-band control protocol as libfabric's own
 * fi_pingpong, so either side may be this program or the upstream one:
 *   - server listens on a TCP control port (default 47592), client connects;
 *   - endpoint names travel as: u32 length (network order), u32 address
 *     format (host order), then the raw name;
 *   - before every size the client sends "q\0", the server answers "a\0";
 *   - after every size the client sends its ack count as a decimal string in
 *     a 10-byte field, the server answers "cnt ok\0";
 *   - at the end both sides send a 4-byte "fin\0" message over the fabric.
 */
#ifndef FI_PINGPONG_H
#define FI_PINGPONG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define PP_DEFAULT_CTRL_PORT "47592"
#define PP_DEFAULT_ITERATIONS 10
/* Tag used by tagged mode; must equal the upstream tool's for interoperability. */
#define PP_TAG 1234
#define PP_CTRL_TIMEOUT_SEC 5
#define PP_COUNT_FIELD_LEN 10
#define PP_FIN_MSG "fin"

struct pp_options {
	const char *src_port;   /* control port to bind (server default 47592) */
	const char *dst_port;   /* control port to connect to (client) */
	const char *dst_addr;   /* server host; NULL means we are the server */
	const char *domain;
	const char *provider;
	enum fi_ep_type ep_type;
	long iterations;
	size_t size;            /* 0: a list of sizes, see all_sizes */
	bool all_sizes;         /* -S all: every size of the long list, not the default six */
	bool check_data;
	bool tagged;
	bool verbose;
	bool ipv6;
};

struct pp_fabric {
	struct fi_info *hints;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_ep *ep;
	struct fid_cq *tx_cq;
	struct fid_cq *rx_cq;
	struct fid_av *av;
	struct fid_mr *mr;
	void *mr_desc;
	char *buf;              /* one allocation: rx half then tx half */
	char *rx_buf;
	char *tx_buf;
	size_t xfer_max;        /* largest payload we will send */
	fi_addr_t remote_addr;
	uint64_t tx_posted, tx_done;
	uint64_t rx_posted, rx_done;
	struct fi_context2 tx_ctx;
	struct fi_context2 rx_ctx;
	unsigned fill_iter, check_iter;
};

struct pp_test {
	struct pp_options opts;
	struct pp_fabric fab;
	int ctrl_fd;
};

extern bool pp_verbose;
void pp_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pp_error(const char *call, int ret);

/* fi_pingpong_ctrl.c */
int pp_ctrl_open(struct pp_test *t);
void pp_ctrl_close(struct pp_test *t);
int pp_ctrl_send(struct pp_test *t, const void *buf, size_t len);
int pp_ctrl_recv(struct pp_test *t, void *buf, size_t len);
int pp_ctrl_sync(struct pp_test *t);
int pp_ctrl_exchange_count(struct pp_test *t, long *acked);
int pp_ctrl_send_name(struct pp_test *t, const void *name, size_t len, uint32_t format);
int pp_ctrl_recv_name(struct pp_test *t, void **name, size_t *len, uint32_t *format);

/* fi_pingpong_fabric.c */
int pp_fabric_init(struct pp_test *t);
void pp_fabric_fini(struct pp_test *t);

/* fi_pingpong_xfer.c */
int pp_post_recv(struct pp_test *t);
int pp_send(struct pp_test *t, size_t size);
int pp_recv(struct pp_test *t, size_t size);
int pp_finalize(struct pp_test *t);

/* fi_pingpong_perf.c */
uint64_t pp_now_usec(void);
void pp_show_perf(size_t size, long sent, long acked, uint64_t elapsed_usec);

/* fi_pingpong.c */
size_t pp_max_listed_size(const struct pp_options *opts);

#endif
