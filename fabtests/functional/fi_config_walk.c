/*
 * fi_config_walk: every combination a provider advertises, tried end to end.
 *
 * From fi_getinfo's own answers for one provider (-p) and endpoint type (-e msg|rdm|both),
 * the walker enumerates configurations
 *     progress (manual, auto) x mr_mode the application supports (all bits, none)
 *   x CQ format (context, msg, data, tagged) x selective completion (off, on)
 *   x counters (none; send/recv/read/write on both sides, and remote read/write at the
 *     target where the info has FI_RMA_EVENT)
 * and, in each, every operation form of every capability class the info offers:
 *     msg    send sendv sendmsg inject senddata injectdata
 *     tagged tsend tsendv tsendmsg tinject tsenddata tinjectdata
 *     rma    write writev writemsg inject_write writedata inject_writedata read readv readmsg
 * (data forms only with cq_data_size > 0, inject forms only within inject_size; atomics have
 * their own walker, fi_rdm_atomic). Both endpoints live in this process on loopback (MSG:
 * pep, connect, accept). Each operation's data, both sides' completions (context, flags,
 * len, data, tag as the format carries them; none where inject or selective completion say
 * none; no stray entries) and counters are checked, each wait bounded (a hang is a failure).
 * What fi_getinfo refuses is not a failure; what it offers and then fails is.
 *
 * -s NODE binds both endpoints to NODE (default 127.0.0.1; in the Soft-RoCE VM the rxe0
 * address 192.0.2.1).
 * -F walks every info fi_getinfo returns and every threading model too (default: the first
 * info of each configuration, FI_THREAD_SAFE). Exit status 0 when every case passed.
 */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define WAIT_MS 5000
#define SIZE 64
#define BUF_SIZE 4096
#define TAG 0x5a17
#define CQ_DATA 0x2468aceULL
#define NO_COUNTERS 1 /* setup's answer when the domain has no counters */

static const char *prov_name = "tcp;ofi_rxm";
static const char *node = "127.0.0.1"; /* both endpoints bind here (-s) */
static int want_ep = -1; /* -1: both */
static bool full, verbose;
static int cases, failures, configs, refused;

struct config {
	enum fi_ep_type ep_type;
	enum fi_progress progress;
	enum fi_threading threading;
	uint64_t mr_mode;
	enum fi_cq_format format;
	bool selective;
	bool counters;
};

struct side {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_pep *pep;
	struct fid_av *av;
	struct fid_ep *ep;
	struct fid_cq *txcq, *rxcq;
	struct fid_cntr *txcntr, *rxcntr, *remcntr;
	struct fid_mr *mr;
	void *desc;
	uint8_t *buf;
	fi_addr_t peer;
};

struct pair {
	struct config cfg;
	struct side a, b; /* a initiates, b is the target */
	char label[256];
};

static const char *format_name(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_CONTEXT: return "context";
	case FI_CQ_FORMAT_MSG: return "msg";
	case FI_CQ_FORMAT_DATA: return "data";
	default: return "tagged";
	}
}

static void fail(struct pair *p, const char *form, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(struct pair *p, const char *form, const char *fmt, ...)
{
	va_list ap;
	failures++;
	printf("FAIL %s %s: ", p->label, form);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* ---- setup ---- */

static struct fi_info *get_info(const struct config *c)
{
	struct fi_info *hints = fi_allocinfo(), *info = NULL;
	if (!hints)
		return NULL;
	hints->ep_attr->type = c->ep_type;
	hints->fabric_attr->prov_name = strdup(prov_name);
	hints->domain_attr->data_progress = c->progress;
	hints->domain_attr->control_progress = c->progress;
	hints->domain_attr->threading = c->threading;
	hints->domain_attr->mr_mode = (int)c->mr_mode;
	hints->mode = FI_CONTEXT | FI_RX_CQ_DATA;
	hints->caps = 0;
	int ret = fi_getinfo(FI_VERSION(1, 17), node, NULL, FI_SOURCE, hints, &info);
	fi_freeinfo(hints);
	return ret ? NULL : info;
}

static int open_common(struct side *s, const struct config *c, struct fi_info *info,
		       bool initiator)
{
	struct fi_cq_attr cq_attr = { .size = 64, .format = c->format, .wait_obj = FI_WAIT_NONE };
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	int ret;
	if ((ret = fi_cq_open(s->domain, &cq_attr, &s->txcq, NULL)) ||
	    (ret = fi_cq_open(s->domain, &cq_attr, &s->rxcq, NULL)))
		return ret;
	if (c->counters) {
		/* Counters are optional domain objects: a domain without them says so at
		 * fi_cntr_open (verbs), before anything runs; that is a refusal, not a failure. */
		if ((ret = fi_cntr_open(s->domain, &cntr_attr, &s->txcntr, NULL)) ||
		    (ret = fi_cntr_open(s->domain, &cntr_attr, &s->rxcntr, NULL)))
			return ret == -FI_ENOSYS ? NO_COUNTERS : ret;
		/* fi_endpoint(3): remote counters need an endpoint created with FI_RMA_EVENT. */
		if (!initiator && (info->caps & FI_RMA) && (info->caps & FI_RMA_EVENT) &&
		    (ret = fi_cntr_open(s->domain, &cntr_attr, &s->remcntr, NULL)))
			return ret;
	}
	s->buf = calloc(1, BUF_SIZE);
	if (!s->buf)
		return -FI_ENOMEM;
	uint64_t access = FI_SEND | FI_RECV | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	if ((ret = fi_mr_reg(s->domain, s->buf, BUF_SIZE, access, 0, initiator ? 1 : 2, 0, &s->mr,
			     NULL)))
		return ret;
	s->desc = fi_mr_desc(s->mr);
	return 0;
}

static int bind_ep(struct side *s, const struct config *c)
{
	int ret;
	uint64_t tx = FI_TRANSMIT | (c->selective ? FI_SELECTIVE_COMPLETION : 0);
	if ((ret = fi_ep_bind(s->ep, &s->txcq->fid, tx)) ||
	    (ret = fi_ep_bind(s->ep, &s->rxcq->fid, FI_RECV)))
		return ret;
	if (s->txcntr &&
	    (ret = fi_ep_bind(s->ep, &s->txcntr->fid, FI_SEND | FI_READ | FI_WRITE)))
		return ret;
	if (s->rxcntr && (ret = fi_ep_bind(s->ep, &s->rxcntr->fid, FI_RECV)))
		return ret;
	if (s->remcntr &&
	    (ret = fi_ep_bind(s->ep, &s->remcntr->fid, FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return ret;
	if (s->info->domain_attr->mr_mode & FI_MR_ENDPOINT) {
		if ((ret = fi_mr_bind(s->mr, &s->ep->fid, 0)) || (ret = fi_mr_enable(s->mr)))
			return ret;
	}
	return 0;
}

static int open_side(struct side *s, const struct config *c, struct fi_info *info,
		     bool initiator)
{
	int ret;
	s->info = fi_dupinfo(info);
	if (!s->info)
		return -FI_ENOMEM;
	if ((ret = fi_fabric(info->fabric_attr, &s->fabric, NULL)) ||
	    (ret = fi_domain(s->fabric, info, &s->domain, NULL)))
		return ret;
	return open_common(s, c, info, initiator);
}

/* Reads the next CM event of s; peeks at the other side's EQ meanwhile, which drives its
 * progress too (manual progress: both sides share this thread). */
static int read_cm(struct side *s, struct side *other, uint32_t want,
		   struct fi_eq_cm_entry *entry)
{
	long long end = now_ms() + WAIT_MS;
	while (now_ms() < end) {
		uint32_t event;
		ssize_t n = fi_eq_read(s->eq, &event, entry, sizeof(*entry), 0);
		if (n == -FI_EAGAIN) {
			struct fi_eq_cm_entry peeked;
			if (other->eq)
				fi_eq_read(other->eq, &event, &peeked, sizeof(peeked), FI_PEEK);
			continue;
		}
		if (n < 0)
			return (int)n;
		return event == want ? 0 : -FI_EOTHER;
	}
	return -FI_ETIMEDOUT;
}

static int setup_rdm(struct pair *p, struct fi_info *info)
{
	struct fi_av_attr av_attr = { .type = FI_AV_UNSPEC };
	struct side *sides[2] = { &p->a, &p->b };
	char names[2][128];
	size_t lens[2] = { sizeof(names[0]), sizeof(names[1]) };
	int ret;
	for (int i = 0; i < 2; i++) {
		struct side *s = sides[i];
		if ((ret = open_side(s, &p->cfg, info, i == 0)) ||
		    (ret = fi_av_open(s->domain, &av_attr, &s->av, NULL)) ||
		    (ret = fi_endpoint(s->domain, info, &s->ep, NULL)) ||
		    (ret = fi_ep_bind(s->ep, &s->av->fid, 0)) || (ret = bind_ep(s, &p->cfg)) ||
		    (ret = fi_enable(s->ep)) || (ret = fi_getname(&s->ep->fid, names[i], &lens[i])))
			return ret;
	}
	for (int i = 0; i < 2; i++)
		if (fi_av_insert(sides[i]->av, names[1 - i], 1, &sides[i]->peer, 0, NULL) != 1)
			return -FI_EADDRNOTAVAIL;
	return 0;
}

static int setup_msg(struct pair *p, struct fi_info *info)
{
	struct fi_eq_attr eq_attr = { .size = 8, .wait_obj = FI_WAIT_NONE };
	struct fi_eq_cm_entry entry;
	char name[128];
	size_t len = sizeof(name);
	int ret;
	/* b listens; a connects to the pep's name. */
	if ((ret = open_side(&p->b, &p->cfg, info, false)) ||
	    (ret = fi_eq_open(p->b.fabric, &eq_attr, &p->b.eq, NULL)) ||
	    (ret = fi_passive_ep(p->b.fabric, info, &p->b.pep, NULL)) ||
	    (ret = fi_pep_bind(p->b.pep, &p->b.eq->fid, 0)) || (ret = fi_listen(p->b.pep)) ||
	    (ret = fi_getname(&p->b.pep->fid, name, &len)))
		return ret;
	struct fi_info *a_info = fi_dupinfo(info);
	if (!a_info)
		return -FI_ENOMEM;
	free(a_info->dest_addr);
	a_info->dest_addr = malloc(len);
	memcpy(a_info->dest_addr, name, len);
	a_info->dest_addrlen = len;
	ret = open_side(&p->a, &p->cfg, a_info, true);
	if (!ret && !(ret = fi_eq_open(p->a.fabric, &eq_attr, &p->a.eq, NULL)) &&
	    !(ret = fi_endpoint(p->a.domain, a_info, &p->a.ep, NULL)) &&
	    !(ret = fi_ep_bind(p->a.ep, &p->a.eq->fid, 0)) && !(ret = bind_ep(&p->a, &p->cfg)) &&
	    !(ret = fi_enable(p->a.ep)))
		ret = fi_connect(p->a.ep, name, NULL, 0);
	fi_freeinfo(a_info);
	if (ret)
		return ret;
	if ((ret = read_cm(&p->b, &p->a, FI_CONNREQ, &entry)))
		return ret;
	ret = fi_endpoint(p->b.domain, entry.info, &p->b.ep, NULL);
	fi_freeinfo(entry.info);
	if (ret || (ret = fi_ep_bind(p->b.ep, &p->b.eq->fid, 0)) ||
	    (ret = bind_ep(&p->b, &p->cfg)) || (ret = fi_enable(p->b.ep)) ||
	    (ret = fi_accept(p->b.ep, NULL, 0)))
		return ret;
	if ((ret = read_cm(&p->b, &p->a, FI_CONNECTED, &entry)) ||
	    (ret = read_cm(&p->a, &p->b, FI_CONNECTED, &entry)))
		return ret;
	p->a.peer = p->b.peer = FI_ADDR_UNSPEC;
	return 0;
}

static void close_fid(void *f)
{
	if (f)
		fi_close((struct fid *)f);
}

static void close_side(struct side *s)
{
	close_fid(s->ep);
	close_fid(s->pep);
	close_fid(s->mr);
	close_fid(s->av);
	close_fid(s->txcq);
	close_fid(s->rxcq);
	close_fid(s->txcntr);
	close_fid(s->rxcntr);
	close_fid(s->remcntr);
	close_fid(s->eq);
	close_fid(s->domain);
	close_fid(s->fabric);
	fi_freeinfo(s->info);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* ---- one operation ---- */

enum cls { MSG, TAGGED, RMA };
struct form {
	enum cls cls;
	const char *name;
	bool inject, data, read, vector, msg;
};
static const struct form forms[] = {
	{ MSG, "send", .inject = false }, { MSG, "sendv", .vector = true }, { MSG, "sendmsg", .msg = true },
	{ MSG, "inject", .inject = true }, { MSG, "senddata", .data = true },
	{ MSG, "injectdata", .inject = true, .data = true },
	{ TAGGED, "tsend", .inject = false }, { TAGGED, "tsendv", .vector = true },
	{ TAGGED, "tsendmsg", .msg = true }, { TAGGED, "tinject", .inject = true },
	{ TAGGED, "tsenddata", .data = true },
	{ TAGGED, "tinjectdata", .inject = true, .data = true },
	{ RMA, "write", .inject = false }, { RMA, "writev", .vector = true }, { RMA, "writemsg", .msg = true },
	{ RMA, "inject_write", .inject = true }, { RMA, "writedata", .data = true },
	{ RMA, "inject_writedata", .inject = true, .data = true },
	{ RMA, "read", .read = true }, { RMA, "readv", .read = true, .vector = true },
	{ RMA, "readmsg", .read = true, .msg = true },
};

struct expect {
	bool want;
	void *context;
	uint64_t flags;
	size_t len;       /* checked for receive-side entries */
	bool has_data;
	bool has_tag;
};

static int progress_until(struct pair *p, struct fid_cq *cq, enum fi_cq_format format,
			  const struct expect *e, const char *form, const char *what)
{
	struct fi_cq_tagged_entry entry;
	long long end = now_ms() + (e->want ? WAIT_MS : 10);
	for (;;) {
		memset(&entry, 0, sizeof(entry));
		ssize_t n = fi_cq_read(cq, &entry, 1);
		if (n == 1) {
			if (!e->want) {
				fail(p, form, "%s: an entry where none was due (context %p)", what,
				     entry.op_context);
				return -1;
			}
			if (entry.op_context != e->context)
				fail(p, form, "%s: context %p, want %p", what, entry.op_context,
				     e->context);
			else if (format != FI_CQ_FORMAT_CONTEXT &&
				 (entry.flags & e->flags) != e->flags)
				fail(p, form, "%s: flags %#llx lack %#llx", what,
				     (unsigned long long)entry.flags, (unsigned long long)e->flags);
			else if (format != FI_CQ_FORMAT_CONTEXT && e->len && entry.len != e->len)
				fail(p, form, "%s: len %zu, want %zu", what, entry.len, e->len);
			else if ((format == FI_CQ_FORMAT_DATA || format == FI_CQ_FORMAT_TAGGED) &&
				 e->has_data && entry.data != CQ_DATA)
				fail(p, form, "%s: data %#llx", what, (unsigned long long)entry.data);
			else if (format == FI_CQ_FORMAT_TAGGED && e->has_tag && entry.tag != TAG)
				fail(p, form, "%s: tag %#llx", what, (unsigned long long)entry.tag);
			else
				return 0;
			return -1;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(cq, &err, 0);
			fail(p, form, "%s: error completion %d (%s)", what, err.err,
			     fi_strerror(err.err));
			return -1;
		}
		if (n != -FI_EAGAIN) {
			fail(p, form, "%s: fi_cq_read %zd", what, n);
			return -1;
		}
		if (now_ms() >= end) {
			if (!e->want)
				return 0;
			fail(p, form, "%s: no completion within %d ms", what, WAIT_MS);
			return -1;
		}
		/* Drive the peer too: both sides share this thread. */
		fi_cq_read(p->a.txcq == cq ? p->b.rxcq : p->a.txcq, NULL, 0);
	}
}

static int wait_cntr(struct pair *p, struct fid_cntr *cntr, uint64_t want, const char *form,
		     const char *what)
{
	if (!cntr)
		return 0;
	long long end = now_ms() + WAIT_MS;
	uint64_t v;
	while ((v = fi_cntr_read(cntr)) < want && now_ms() < end) {
		fi_cq_read(p->a.txcq, NULL, 0);
		fi_cq_read(p->b.rxcq, NULL, 0);
	}
	if (v != want) {
		fail(p, form, "%s counter %llu, want %llu (errors %llu)", what,
		     (unsigned long long)v, (unsigned long long)want,
		     (unsigned long long)fi_cntr_readerr(cntr));
		return -1;
	}
	return 0;
}

static ssize_t post(struct pair *p, const struct form *f, void *ctx)
{
	struct side *a = &p->a, *b = &p->b;
	uint8_t *src = a->buf;
	struct iovec iov[2] = { { src, SIZE / 2 }, { src + SIZE / 2, SIZE / 2 } };
	void *desc[2] = { a->desc, a->desc };
	uint64_t raddr = (a->info->domain_attr->mr_mode & FI_MR_VIRT_ADDR)
				 ? (uint64_t)(uintptr_t)b->buf : 0;
	uint64_t key = fi_mr_key(b->mr);
	struct fi_rma_iov rma = { raddr, SIZE, key };
	struct fi_msg msg = { iov, desc, 2, a->peer, ctx, 0 };
	struct fi_msg_tagged tmsg = { iov, desc, 2, a->peer, TAG, 0, ctx, 0 };
	struct fi_msg_rma rmsg = { iov, desc, 2, a->peer, &rma, 1, ctx, 0 };
	ssize_t ret;
	long long end = now_ms() + WAIT_MS;
	do {
		switch (f - forms) {
		case 0: ret = fi_send(a->ep, src, SIZE, a->desc, a->peer, ctx); break;
		case 1: ret = fi_sendv(a->ep, iov, desc, 2, a->peer, ctx); break;
		case 2: ret = fi_sendmsg(a->ep, &msg, FI_COMPLETION); break;
		case 3: ret = fi_inject(a->ep, src, SIZE, a->peer); break;
		case 4: ret = fi_senddata(a->ep, src, SIZE, a->desc, CQ_DATA, a->peer, ctx); break;
		case 5: ret = fi_injectdata(a->ep, src, SIZE, CQ_DATA, a->peer); break;
		case 6: ret = fi_tsend(a->ep, src, SIZE, a->desc, a->peer, TAG, ctx); break;
		case 7: ret = fi_tsendv(a->ep, iov, desc, 2, a->peer, TAG, ctx); break;
		case 8: ret = fi_tsendmsg(a->ep, &tmsg, FI_COMPLETION); break;
		case 9: ret = fi_tinject(a->ep, src, SIZE, a->peer, TAG); break;
		case 10: ret = fi_tsenddata(a->ep, src, SIZE, a->desc, CQ_DATA, a->peer, TAG, ctx);
			break;
		case 11: ret = fi_tinjectdata(a->ep, src, SIZE, CQ_DATA, a->peer, TAG); break;
		case 12: ret = fi_write(a->ep, src, SIZE, a->desc, a->peer, raddr, key, ctx); break;
		case 13: ret = fi_writev(a->ep, iov, desc, 2, a->peer, raddr, key, ctx); break;
		case 14: ret = fi_writemsg(a->ep, &rmsg, FI_COMPLETION); break;
		case 15: ret = fi_inject_write(a->ep, src, SIZE, a->peer, raddr, key); break;
		case 16: ret = fi_writedata(a->ep, src, SIZE, a->desc, CQ_DATA, a->peer, raddr, key,
					    ctx);
			break;
		case 17: ret = fi_inject_writedata(a->ep, src, SIZE, CQ_DATA, a->peer, raddr, key);
			break;
		case 18: ret = fi_read(a->ep, src, SIZE, a->desc, a->peer, raddr, key, ctx); break;
		case 19: ret = fi_readv(a->ep, iov, desc, 2, a->peer, raddr, key, ctx); break;
		default: ret = fi_readmsg(a->ep, &rmsg, FI_COMPLETION); break;
		}
		if (ret == -FI_EAGAIN) {
			fi_cq_read(a->txcq, NULL, 0);
			fi_cq_read(b->rxcq, NULL, 0);
		}
	} while (ret == -FI_EAGAIN && now_ms() < end);
	return ret;
}

struct counts {
	uint64_t tx, rx, rem;
};

static void run_form(struct pair *p, const struct form *f, struct counts *n)
{
	struct side *a = &p->a, *b = &p->b;
	const struct config *c = &p->cfg;
	int tx_ctx, rx_ctx;
	cases++;
	/* The source of the transfer holds the pattern; the destination is cleared. */
	uint8_t *from = f->read ? b->buf : a->buf, *to = f->read ? a->buf : b->buf;
	for (int i = 0; i < SIZE; i++)
		from[i] = (uint8_t)(cases * 7 + i);
	memset(to, 0, SIZE);
	/* FI_RX_CQ_DATA may come in the info's mode or its rx_attr's (verbs). */
	bool rx_cq_data = (b->info->mode | b->info->rx_attr->mode) & FI_RX_CQ_DATA;
	bool receive = f->cls != RMA || (f->data && rx_cq_data);
	if (receive) {
		ssize_t ret;
		long long end = now_ms() + WAIT_MS;
		do {
			ret = f->cls == TAGGED
				      ? fi_trecv(b->ep, b->buf, BUF_SIZE, b->desc, b->peer, TAG, 0,
						 &rx_ctx)
				      : fi_recv(b->ep, b->buf, BUF_SIZE, b->desc, b->peer, &rx_ctx);
		} while (ret == -FI_EAGAIN && now_ms() < end && (fi_cq_read(b->rxcq, NULL, 0), 1));
		if (ret) {
			fail(p, f->name, "posting the receive: %zd (%s)", ret, fi_strerror((int)-ret));
			return;
		}
	}
	ssize_t ret = post(p, f, &tx_ctx);
	if (ret) {
		fail(p, f->name, "%zd (%s)", ret, fi_strerror((int)-ret));
		return;
	}
	uint64_t class_flags = f->cls == MSG ? FI_MSG : f->cls == TAGGED ? FI_TAGGED : FI_RMA;
	struct expect tx = {
		.want = !f->inject && (!c->selective || f->msg), .context = &tx_ctx,
		.flags = class_flags | (f->cls == RMA ? (f->read ? FI_READ : FI_WRITE) : FI_SEND),
	};
	struct expect rx = {
		.want = f->cls != RMA || f->data,
		.context = f->cls != RMA || receive ? (void *)&rx_ctx : NULL,
		.flags = f->cls == RMA ? FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA
				       : class_flags | FI_RECV | (f->data ? FI_REMOTE_CQ_DATA : 0),
		.len = f->cls == RMA ? 0 : SIZE, .has_data = f->data, .has_tag = f->cls == TAGGED,
	};
	if (progress_until(p, b->rxcq, c->format, &rx, f->name, "target") ||
	    progress_until(p, a->txcq, c->format, &tx, f->name, "initiator"))
		return;
	/* An RMA target has nothing to read: wait for the data itself. */
	long long end = now_ms() + WAIT_MS;
	while (memcmp(from, to, SIZE) && now_ms() < end) {
		fi_cq_read(a->txcq, NULL, 0);
		fi_cq_read(b->rxcq, NULL, 0);
	}
	if (memcmp(from, to, SIZE)) {
		fail(p, f->name, "the data did not arrive intact");
		return;
	}
	n->tx++;
	if (f->cls != RMA)
		n->rx++;
	else
		n->rem++;
	if (wait_cntr(p, a->txcntr, n->tx, f->name, "initiator") ||
	    wait_cntr(p, b->rxcntr, n->rx, f->name, "target receive") ||
	    wait_cntr(p, b->remcntr, n->rem, f->name, "target remote"))
		return;
	/* Nothing else may show up on either side. */
	struct expect none = { .want = false };
	progress_until(p, a->txcq, c->format, &none, f->name, "initiator (stray)");
	progress_until(p, b->rxcq, c->format, &none, f->name, "target (stray)");
	if (verbose)
		printf("ok   %s %s\n", p->label, f->name);
}

static bool form_offered(const struct fi_info *info, const struct form *f)
{
	uint64_t need = f->cls == MSG ? FI_MSG : f->cls == TAGGED ? FI_TAGGED : FI_RMA;
	if (!(info->caps & need))
		return false;
	if (f->data && !info->domain_attr->cq_data_size)
		return false;
	if (f->inject && info->tx_attr->inject_size < SIZE)
		return false;
	if (f->cls == RMA && !(info->caps & (f->read ? FI_READ : FI_WRITE)) &&
	    (info->caps & (FI_READ | FI_WRITE)))
		return false;
	return true;
}

static void walk_config(struct config *c)
{
	struct fi_info *infos = get_info(c);
	if (!infos) {
		refused++;
		return;
	}
	for (struct fi_info *info = infos; info; info = full ? info->next : NULL) {
		struct pair p;
		memset(&p, 0, sizeof(p));
		p.cfg = *c;
		snprintf(p.label, sizeof(p.label), "[%s %s %s mr %#llx cq %s%s%s %s]",
			 c->ep_type == FI_EP_MSG ? "msg" : "rdm",
			 c->progress == FI_PROGRESS_AUTO ? "auto" : "manual",
			 fi_tostr(&c->threading, FI_TYPE_THREADING),
			 (unsigned long long)info->domain_attr->mr_mode, format_name(c->format),
			 c->selective ? " selective" : "", c->counters ? " counters" : "",
			 info->fabric_attr->prov_name);
		configs++;
		int ret = c->ep_type == FI_EP_MSG ? setup_msg(&p, info) : setup_rdm(&p, info);
		if (ret == NO_COUNTERS) {
			configs--;
			refused++;
		} else if (ret) {
			cases++;
			fail(&p, "setup", "%d (%s)", ret, fi_strerror(-ret));
		} else {
			struct counts n = { 0 };
			for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
				if (form_offered(info, &forms[i]))
					run_form(&p, &forms[i], &n);
		}
		close_side(&p.a);
		close_side(&p.b);
	}
	fi_freeinfo(infos);
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "p:e:s:Fvh")) != -1) {
		switch (opt) {
		case 'p': prov_name = optarg; break;
		case 'e':
			want_ep = !strcmp(optarg, "msg") ? FI_EP_MSG
				  : !strcmp(optarg, "rdm") ? FI_EP_RDM : -1;
			break;
		case 's': node = optarg; break;
		case 'F': full = true; break;
		case 'v': verbose = true; break;
		default:
			fprintf(stderr, "usage: %s [-p provider] [-e msg|rdm] [-s node] [-F] [-v]\n", argv[0]);
			return 2;
		}
	}
	static const enum fi_ep_type eps[] = { FI_EP_MSG, FI_EP_RDM };
	static const enum fi_progress progs[] = { FI_PROGRESS_MANUAL, FI_PROGRESS_AUTO };
	static const enum fi_threading threads[] = { FI_THREAD_SAFE, FI_THREAD_DOMAIN,
						     FI_THREAD_COMPLETION, FI_THREAD_ENDPOINT };
	static const uint64_t mr_modes[] = {
		FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT, 0
	};
	static const enum fi_cq_format formats[] = { FI_CQ_FORMAT_CONTEXT, FI_CQ_FORMAT_MSG,
						     FI_CQ_FORMAT_DATA, FI_CQ_FORMAT_TAGGED };
	for (size_t e = 0; e < 2; e++) {
		if (want_ep >= 0 && (int)eps[e] != want_ep)
			continue;
		for (size_t pr = 0; pr < 2; pr++)
			for (size_t t = 0; t < (full ? 4u : 1u); t++)
				for (size_t m = 0; m < 2; m++)
					for (size_t f = 0; f < 4; f++)
						for (int sel = 0; sel < 2; sel++)
							for (int cn = 0; cn < 2; cn++) {
								struct config c = {
									eps[e], progs[pr], threads[t],
									mr_modes[m], formats[f], sel, cn
								};
								walk_config(&c);
							}
	}
	printf("%s: %d configurations (%d refused: no info from fi_getinfo, or no counters), "
	       "%d cases, %d failed\n",
	       prov_name, configs, refused, cases, failures);
	if (!configs)
		return 77;
	return failures ? 1 : 0;
}
