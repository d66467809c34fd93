/*
 * fi_rdm_collective: collectives (fi_collective(3), fi_av_set(3)) among N processes of this
 * host, each with its own RDM endpoint.
 *
 * The program forks N ranks (-n, default 3); the parent only passes the endpoint names
 * around (every rank sends its name over a socketpair, the parent answers with all of them
 * in rank order) and combines the exit codes. Every rank inserts the names in rank order, so
 * AV index r is rank r everywhere, and then:
 *   - joins a group of all ranks (an AV set of the range 0..N-1) and the even ranks also a
 *     group of every second rank (stride 2), each join reported by FI_JOIN_COMPLETE on the
 *     endpoint's EQ with the fid_mc and the context given;
 *   - on each group: barriers; for every datatype fi_query_collective accepts for
 *     FI_BROADCAST, a broadcast from every member, an allgather and a scatter (count
 *     elements per member) from the last member; for every reduction (FI_MIN..FI_BXOR) it
 *     accepts for FI_ALLREDUCE, an allreduce; each result checked against values computed
 *     here from fi_atomic(3)'s definitions;
 *   - checks that the collectives fi_query_collective calls unsupported return -FI_ENOSYS.
 * Completions are matched by context on the endpoint's CQ. A provider without FI_COLLECTIVE
 * is "not run" (61), as is one whose fi_join_collective or fi_barrier is not implemented (38).
 *
 * usage: fi_rdm_collective -p PROVIDER [-n RANKS] [-s ADDR] [-T SECONDS] [-c COUNT]
 */
#include "../common/shared.h"

#include <complex.h>
#include <rdma/fi_collective.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 64
#define NAME_MAX_LEN 256
#define ELEM_MAX 32 /* sizeof(long double complex) */

static const char *prov_name;
static const char *src_addr = "127.0.0.1";
static int nranks = 3;
static int timeout_sec = 20;
static size_t count = 5;

struct rank {
	int id;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_eq *eq;
	struct fid_ep *ep;
};

struct group {
	const char *name;
	int members[MAX_RANKS]; /* process ranks, in set order */
	int size;
	int me;                 /* our index in members */
	struct fid_av_set *set;
	struct fid_mc *mc;
	fi_addr_t coll_addr;
};

static uint64_t now_usec(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* ---- values and the reference reductions ---- */

/* Small integers (zeros included, for the logical reductions), the same in every rank. */
static long value_of(int rank, size_t i, int salt)
{
	return (long)(((size_t)rank + 1 + (size_t)salt) * (i + 1) % 5);
}

static size_t dt_size(enum fi_datatype dt)
{
	switch (dt) {
	case FI_INT8: case FI_UINT8: return 1;
	case FI_INT16: case FI_UINT16: return 2;
	case FI_INT32: case FI_UINT32: case FI_FLOAT: return 4;
	case FI_INT64: case FI_UINT64: case FI_DOUBLE: case FI_FLOAT_COMPLEX: return 8;
	case FI_DOUBLE_COMPLEX: return 16;
	case FI_LONG_DOUBLE: return sizeof(long double);
	case FI_LONG_DOUBLE_COMPLEX: return sizeof(long double complex);
	default: return 0;
	}
}

#define PUT(T, MAKE) ((T *)buf)[i] = (T)(MAKE)
static void put(void *buf, size_t i, enum fi_datatype dt, long v)
{
	switch (dt) {
	case FI_INT8: PUT(int8_t, v); break;
	case FI_UINT8: PUT(uint8_t, v); break;
	case FI_INT16: PUT(int16_t, v); break;
	case FI_UINT16: PUT(uint16_t, v); break;
	case FI_INT32: PUT(int32_t, v); break;
	case FI_UINT32: PUT(uint32_t, v); break;
	case FI_INT64: PUT(int64_t, v); break;
	case FI_UINT64: PUT(uint64_t, v); break;
	case FI_FLOAT: PUT(float, v); break;
	case FI_DOUBLE: PUT(double, v); break;
	case FI_LONG_DOUBLE: PUT(long double, v); break;
	case FI_FLOAT_COMPLEX: PUT(float complex, (float)v + 1.0f * I); break;
	case FI_DOUBLE_COMPLEX: PUT(double complex, (double)v + 1.0 * I); break;
	case FI_LONG_DOUBLE_COMPLEX: PUT(long double complex, (long double)v + 1.0L * I); break;
	default: break;
	}
}

/* acc = acc (op) v, element i, per fi_atomic(3); false if op is undefined for the type. */
#define FOLD_ORDERED(T)                                                              \
	case FI_MIN: if (b < a) a = b; break;                                        \
	case FI_MAX: if (b > a) a = b; break;
#define FOLD_COMMON(T)                                                               \
	case FI_SUM: a = (T)(a + b); break;                                          \
	case FI_PROD: a = (T)(a * b); break;
#define FOLD_LOGICAL(T)                                                              \
	case FI_LOR: a = (T)((a != 0) || (b != 0)); break;                           \
	case FI_LAND: a = (T)((a != 0) && (b != 0)); break;                          \
	case FI_LXOR: a = (T)((a != 0 && b == 0) || (a == 0 && b != 0)); break;
#define FOLD_BITS(T)                                                                 \
	case FI_BOR: a = (T)(a | b); break;                                          \
	case FI_BAND: a = (T)(a & b); break;                                         \
	case FI_BXOR: a = (T)(a ^ b); break;

#define FOLD_INT(name, T)                                                             \
	static bool fold_##name(enum fi_op op, void *acc, const void *in, size_t i)  \
	{                                                                            \
		T a = ((T *)acc)[i], b = ((const T *)in)[i];                        \
		switch (op) {                                                        \
		FOLD_ORDERED(T) FOLD_COMMON(T) FOLD_LOGICAL(T) FOLD_BITS(T)          \
		default: return false;                                               \
		}                                                                    \
		((T *)acc)[i] = a;                                                   \
		return true;                                                         \
	}
#define FOLD_REAL(name, T)                                                            \
	static bool fold_##name(enum fi_op op, void *acc, const void *in, size_t i)  \
	{                                                                            \
		T a = ((T *)acc)[i], b = ((const T *)in)[i];                        \
		switch (op) {                                                        \
		FOLD_ORDERED(T) FOLD_COMMON(T) FOLD_LOGICAL(T)                       \
		default: return false;                                               \
		}                                                                    \
		((T *)acc)[i] = a;                                                   \
		return true;                                                         \
	}
#define FOLD_COMPLEX(name, T)                                                         \
	static bool fold_##name(enum fi_op op, void *acc, const void *in, size_t i)  \
	{                                                                            \
		T a = ((T *)acc)[i], b = ((const T *)in)[i];                        \
		switch (op) {                                                        \
		FOLD_COMMON(T) FOLD_LOGICAL(T)                                       \
		default: return false;                                               \
		}                                                                    \
		((T *)acc)[i] = a;                                                   \
		return true;                                                         \
	}
FOLD_INT(i8, int8_t)
FOLD_INT(u8, uint8_t)
FOLD_INT(i16, int16_t)
FOLD_INT(u16, uint16_t)
FOLD_INT(i32, int32_t)
FOLD_INT(u32, uint32_t)
FOLD_INT(i64, int64_t)
FOLD_INT(u64, uint64_t)
FOLD_REAL(flt, float)
FOLD_REAL(dbl, double)
FOLD_REAL(ldbl, long double)
FOLD_COMPLEX(cflt, float complex)
FOLD_COMPLEX(cdbl, double complex)
FOLD_COMPLEX(cldbl, long double complex)

static bool fold(enum fi_datatype dt, enum fi_op op, void *acc, const void *in, size_t i)
{
	switch (dt) {
	case FI_INT8: return fold_i8(op, acc, in, i);
	case FI_UINT8: return fold_u8(op, acc, in, i);
	case FI_INT16: return fold_i16(op, acc, in, i);
	case FI_UINT16: return fold_u16(op, acc, in, i);
	case FI_INT32: return fold_i32(op, acc, in, i);
	case FI_UINT32: return fold_u32(op, acc, in, i);
	case FI_INT64: return fold_i64(op, acc, in, i);
	case FI_UINT64: return fold_u64(op, acc, in, i);
	case FI_FLOAT: return fold_flt(op, acc, in, i);
	case FI_DOUBLE: return fold_dbl(op, acc, in, i);
	case FI_LONG_DOUBLE: return fold_ldbl(op, acc, in, i);
	case FI_FLOAT_COMPLEX: return fold_cflt(op, acc, in, i);
	case FI_DOUBLE_COMPLEX: return fold_cdbl(op, acc, in, i);
	case FI_LONG_DOUBLE_COMPLEX: return fold_cldbl(op, acc, in, i);
	default: return false;
	}
}

/* Compares values (long double has padding bytes a memcmp would look at). */
static bool same(enum fi_datatype dt, const void *a, const void *b, size_t n)
{
	if (dt == FI_LONG_DOUBLE || dt == FI_LONG_DOUBLE_COMPLEX) {
		for (size_t i = 0; i < n; i++) {
			if (dt == FI_LONG_DOUBLE &&
			    ((const long double *)a)[i] != ((const long double *)b)[i])
				return false;
			if (dt == FI_LONG_DOUBLE_COMPLEX &&
			    ((const long double complex *)a)[i] !=
				    ((const long double complex *)b)[i])
				return false;
		}
		return true;
	}
	return memcmp(a, b, n * dt_size(dt)) == 0;
}

/* ---- setup ---- */

static int open_rank(struct rank *r)
{
	struct fi_info *hints = fi_allocinfo();
	if (!hints)
		return -FI_ENOMEM;
	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_MSG | FI_COLLECTIVE;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov_name);
	int ret = fi_getinfo(FT_API_VERSION, src_addr, NULL, FI_SOURCE, hints, &r->info);
	if (ret == -FI_ENODATA) /* a provider without IP addresses (shm) */
		ret = fi_getinfo(FT_API_VERSION, NULL, NULL, 0, hints, &r->info);
	fi_freeinfo(hints);
	if (ret)
		return ret;
	ret = fi_fabric(r->info->fabric_attr, &r->fabric, NULL);
	if (!ret)
		ret = fi_domain(r->fabric, r->info, &r->domain, NULL);
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	if (!ret)
		ret = fi_av_open(r->domain, &av_attr, &r->av, NULL);
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .size = 256 };
	if (!ret)
		ret = fi_cq_open(r->domain, &cq_attr, &r->cq, NULL);
	struct fi_eq_attr eq_attr = { .size = 16 };
	if (!ret)
		ret = fi_eq_open(r->fabric, &eq_attr, &r->eq, NULL);
	if (!ret)
		ret = fi_endpoint(r->domain, r->info, &r->ep, NULL);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->av->fid, 0);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->cq->fid, FI_TRANSMIT | FI_RECV);
	if (!ret)
		ret = fi_ep_bind(r->ep, &r->eq->fid, 0);
	if (!ret)
		ret = fi_enable(r->ep);
	if (ret)
		FT_PRINTERR("opening the endpoint", ret);
	return ret;
}

static void close_fid(struct fid *fid, const char *what)
{
	if (!fid)
		return;
	int ret = fi_close(fid);
	if (ret)
		FT_PRINTERR(what, ret);
}

static void close_rank(struct rank *r)
{
	close_fid(r->ep ? &r->ep->fid : NULL, "fi_close(ep)");
	close_fid(r->eq ? &r->eq->fid : NULL, "fi_close(eq)");
	close_fid(r->cq ? &r->cq->fid : NULL, "fi_close(cq)");
	close_fid(r->av ? &r->av->fid : NULL, "fi_close(av)");
	close_fid(r->domain ? &r->domain->fid : NULL, "fi_close(domain)");
	close_fid(r->fabric ? &r->fabric->fid : NULL, "fi_close(fabric)");
	if (r->info)
		fi_freeinfo(r->info);
}

static bool write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

static bool read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t n = read(fd, p, len);
		if (n <= 0)
			return false;
		p += n;
		len -= (size_t)n;
	}
	return true;
}

/* One record: status (0 or -FI_E*), name length, name. */
struct record {
	int32_t status;
	uint32_t len;
	char name[NAME_MAX_LEN];
};

/* ---- waiting ---- */

/* Reads the CQ until the completion with 'context' arrives (other contexts are an error). */
static int wait_comp(struct rank *r, void *context, const char *what)
{
	uint64_t deadline = now_usec() + (uint64_t)timeout_sec * 1000000;
	for (;;) {
		struct fi_cq_msg_entry e;
		ssize_t n = fi_cq_read(r->cq, &e, 1);
		if (n == 1) {
			if (e.op_context != context) {
				FT_ERR("rank %d %s: completion of another operation", r->id, what);
				return -FI_EOTHER;
			}
			return 0;
		}
		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };
			fi_cq_readerr(r->cq, &err, 0);
			FT_ERR("rank %d %s: error completion %d (%s)", r->id, what, err.err,
			       fi_strerror(err.err));
			return -FI_EOTHER;
		}
		if (n != -FI_EAGAIN) {
			FT_PRINTERR("fi_cq_read", n);
			return (int)n;
		}
		if (now_usec() > deadline) {
			FT_ERR("rank %d %s: no completion within %d s", r->id, what, timeout_sec);
			return -FI_ETIMEDOUT;
		}
		sched_yield(); /* N processes share few cores */
	}
}

static int wait_join(struct rank *r, struct group *g)
{
	uint64_t deadline = now_usec() + (uint64_t)timeout_sec * 1000000;
	for (;;) {
		uint32_t event = 0;
		struct fi_eq_entry entry;
		ssize_t n = fi_eq_read(r->eq, &event, &entry, sizeof entry, 0);
		if (n == (ssize_t)sizeof entry) {
			if (event != FI_JOIN_COMPLETE || entry.fid != &g->mc->fid ||
			    entry.context != g) {
				FT_ERR("rank %d join %s: event %u fid %p context %p", r->id,
				       g->name, event, (void *)entry.fid, entry.context);
				return -FI_EOTHER;
			}
			return 0;
		}
		if (n == -FI_EAVAIL) {
			struct fi_eq_err_entry err = { 0 };
			fi_eq_readerr(r->eq, &err, 0);
			FT_ERR("rank %d join %s: error %d (%s)", r->id, g->name, err.err,
			       fi_strerror(err.err));
			return -FI_EOTHER;
		}
		if (n != -FI_EAGAIN) {
			FT_PRINTERR("fi_eq_read", n);
			return (int)n;
		}
		/* The CQ drives the endpoint's progress (FI_PROGRESS_MANUAL). */
		struct fi_cq_msg_entry e;
		n = fi_cq_read(r->cq, &e, 1);
		if (n == 1 || (n < 0 && n != -FI_EAGAIN)) {
			FT_ERR("rank %d join %s: unexpected CQ read %zd", r->id, g->name, n);
			return -FI_EOTHER;
		}
		if (now_usec() > deadline) {
			FT_ERR("rank %d join %s: no FI_JOIN_COMPLETE within %d s", r->id, g->name,
			       timeout_sec);
			return -FI_ETIMEDOUT;
		}
		sched_yield();
	}
}

static int join(struct rank *r, struct group *g, uint64_t stride)
{
	struct fi_av_set_attr attr = {
		.count = (size_t)nranks,
		.start_addr = 0,
		.end_addr = (fi_addr_t)(nranks - 1),
		.stride = stride,
	};
	int ret = fi_av_set(r->av, &attr, &g->set, NULL);
	if (ret) {
		FT_PRINTERR("fi_av_set", ret);
		return ret;
	}
	fi_addr_t set_addr = FI_ADDR_NOTAVAIL;
	ret = fi_av_set_addr(g->set, &set_addr);
	if (ret) {
		FT_PRINTERR("fi_av_set_addr", ret);
		return ret;
	}
	ret = fi_join_collective(r->ep, set_addr, g->set, 0, &g->mc, g);
	if (ret) {
		FT_PRINTERR("fi_join_collective", ret);
		return ret;
	}
	ret = wait_join(r, g);
	if (ret)
		return ret;
	g->coll_addr = fi_mc_addr(g->mc);
	return 0;
}

/* ---- the collectives ---- */

static int check_ret(ssize_t ret, const char *what)
{
	if (ret)
		FT_PRINTERR(what, ret);
	return (int)ret;
}

static int run_barriers(struct rank *r, struct group *g)
{
	for (int i = 0; i < 3; i++) {
		FT_CHECK(check_ret(fi_barrier(r->ep, g->coll_addr, g), "fi_barrier"));
		FT_CHECK(wait_comp(r, g, "barrier"));
	}
	return 0;
}

static int run_broadcasts(struct rank *r, struct group *g, enum fi_datatype dt)
{
	unsigned char buf[64 * ELEM_MAX], expect[64 * ELEM_MAX];
	for (int root = 0; root < g->size; root++) {
		for (size_t i = 0; i < count; i++) {
			put(expect, i, dt, value_of(g->members[root], i, 1));
			put(buf, i, dt, g->me == root ? value_of(r->id, i, 1) : 99);
		}
		FT_CHECK(check_ret(fi_broadcast(r->ep, buf, count, NULL, g->coll_addr,
						(fi_addr_t)g->members[root], dt, 0, g),
				   "fi_broadcast"));
		FT_CHECK(wait_comp(r, g, "broadcast"));
		FT_EXPECT(same(dt, buf, expect, count), "%s broadcast from %d, datatype %d",
			  g->name, root, dt);
	}
	return 0;
}

static int run_allgather(struct rank *r, struct group *g, enum fi_datatype dt)
{
	size_t size = dt_size(dt);
	unsigned char in[64 * ELEM_MAX];
	unsigned char *out = calloc((size_t)g->size * count, size);
	unsigned char *expect = calloc((size_t)g->size * count, size);
	int ret = -FI_ENOMEM;
	if (!out || !expect)
		goto done;
	for (size_t i = 0; i < count; i++)
		put(in, i, dt, value_of(r->id, i, 2));
	for (int m = 0; m < g->size; m++)
		for (size_t i = 0; i < count; i++)
			put(expect + (size_t)m * count * size, i, dt, value_of(g->members[m], i, 2));
	ret = check_ret(fi_allgather(r->ep, in, count, NULL, out, NULL, g->coll_addr, dt, 0, g),
			"fi_allgather");
	if (!ret)
		ret = wait_comp(r, g, "allgather");
	if (!ret && !same(dt, out, expect, (size_t)g->size * count)) {
		FT_ERR("%s allgather, datatype %d: wrong result", g->name, dt);
		ret = -FI_EOTHER;
	}
done:
	free(out);
	free(expect);
	return ret;
}

static int run_scatter(struct rank *r, struct group *g, enum fi_datatype dt)
{
	size_t size = dt_size(dt);
	int root = g->size - 1;
	unsigned char out[64 * ELEM_MAX], expect[64 * ELEM_MAX];
	unsigned char *src = calloc((size_t)g->size * count, size);
	if (!src)
		return -FI_ENOMEM;
	for (size_t i = 0; i < (size_t)g->size * count; i++)
		put(src, i, dt, (long)(i % 7) + 3);
	for (size_t i = 0; i < count; i++) {
		put(expect, i, dt, (long)(((size_t)g->me * count + i) % 7) + 3);
		put(out, i, dt, 99);
	}
	int ret = check_ret(fi_scatter(r->ep, g->me == root ? src : NULL, count, NULL, out, NULL,
				       g->coll_addr, (fi_addr_t)g->members[root], dt, 0, g),
			    "fi_scatter");
	if (!ret)
		ret = wait_comp(r, g, "scatter");
	if (!ret && !same(dt, out, expect, count)) {
		FT_ERR("%s scatter from %d, datatype %d: wrong block", g->name, root, dt);
		ret = -FI_EOTHER;
	}
	free(src);
	return ret;
}

static int run_allreduce(struct rank *r, struct group *g, enum fi_datatype dt, enum fi_op op)
{
	unsigned char in[64 * ELEM_MAX], out[64 * ELEM_MAX], expect[64 * ELEM_MAX],
		other[64 * ELEM_MAX];
	for (size_t i = 0; i < count; i++) {
		put(in, i, dt, value_of(r->id, i, 3));
		put(out, i, dt, 99);
		put(expect, i, dt, value_of(g->members[0], i, 3));
	}
	for (int m = 1; m < g->size; m++)
		for (size_t i = 0; i < count; i++) {
			put(other, i, dt, value_of(g->members[m], i, 3));
			FT_EXPECT(fold(dt, op, expect, other, i), "op %d on datatype %d reported "
				  "by fi_query_collective but not defined by fi_atomic(3)", op, dt);
		}
	FT_CHECK(check_ret(fi_allreduce(r->ep, in, count, NULL, out, NULL, g->coll_addr, dt, op,
					0, g),
			   "fi_allreduce"));
	FT_CHECK(wait_comp(r, g, "allreduce"));
	FT_EXPECT(same(dt, out, expect, count), "%s allreduce op %d datatype %d", g->name, op,
		  dt);
	return 0;
}

static int run_group(struct rank *r, struct group *g, int *cases)
{
	FT_CHECK(run_barriers(r, g));
	for (int d = FI_INT8; d <= FI_LONG_DOUBLE_COMPLEX; d++) {
		enum fi_datatype dt = (enum fi_datatype)d;
		if (!dt_size(dt))
			continue;
		struct fi_collective_attr attr = { .op = FI_NOOP, .datatype = dt };
		if (fi_query_collective(r->domain, FI_BROADCAST, &attr, 0) == 0) {
			FT_CHECK(run_broadcasts(r, g, dt));
			++*cases;
		}
		attr = (struct fi_collective_attr){ .op = FI_NOOP, .datatype = dt };
		if (fi_query_collective(r->domain, FI_ALLGATHER, &attr, 0) == 0) {
			FT_CHECK(run_allgather(r, g, dt));
			++*cases;
		}
		attr = (struct fi_collective_attr){ .op = FI_NOOP, .datatype = dt };
		if (fi_query_collective(r->domain, FI_SCATTER, &attr, 0) == 0) {
			FT_CHECK(run_scatter(r, g, dt));
			++*cases;
		}
		for (int o = FI_MIN; o <= FI_BXOR; o++) {
			attr = (struct fi_collective_attr){ .op = (enum fi_op)o, .datatype = dt };
			if (fi_query_collective(r->domain, FI_ALLREDUCE, &attr, 0))
				continue;
			FT_CHECK(run_allreduce(r, g, dt, (enum fi_op)o));
			++*cases;
		}
	}
	return 0;
}

/* What fi_query_collective calls unsupported must answer -FI_ENOSYS. */
static int check_unsupported(struct rank *r, struct group *g)
{
	int64_t x[2] = { 0 }, y[2 * MAX_RANKS] = { 0 };
	struct fi_collective_attr attr = { .op = FI_SUM, .datatype = FI_INT64 };
	if (fi_query_collective(r->domain, FI_ALLTOALL, &attr, 0) == -FI_ENOSYS)
		FT_EXPECT(fi_alltoall(r->ep, x, 1, NULL, y, NULL, g->coll_addr, FI_INT64, 0, g) ==
				  -FI_ENOSYS, "alltoall");
	attr = (struct fi_collective_attr){ .op = FI_SUM, .datatype = FI_INT64 };
	if (fi_query_collective(r->domain, FI_REDUCE_SCATTER, &attr, 0) == -FI_ENOSYS)
		FT_EXPECT(fi_reduce_scatter(r->ep, x, 1, NULL, y, NULL, g->coll_addr, FI_INT64,
					    FI_SUM, 0, g) == -FI_ENOSYS, "reduce_scatter");
	attr = (struct fi_collective_attr){ .op = FI_SUM, .datatype = FI_INT64 };
	if (fi_query_collective(r->domain, FI_REDUCE, &attr, 0) == -FI_ENOSYS)
		FT_EXPECT(fi_reduce(r->ep, x, 1, NULL, y, NULL, g->coll_addr, 0, FI_INT64, FI_SUM,
				    0, g) == -FI_ENOSYS, "reduce");
	attr = (struct fi_collective_attr){ .op = FI_NOOP, .datatype = FI_INT64 };
	if (fi_query_collective(r->domain, FI_GATHER, &attr, 0) == -FI_ENOSYS)
		FT_EXPECT(fi_gather(r->ep, x, 1, NULL, y, NULL, g->coll_addr, 0, FI_INT64, 0, g) ==
				  -FI_ENOSYS, "gather");
	return 0;
}

static void close_group(struct group *g)
{
	close_fid(g->mc ? &g->mc->fid : NULL, "fi_close(mc)");
	close_fid(g->set ? &g->set->fid : NULL, "fi_close(av_set)");
}

/* ---- one rank ---- */

static int run_rank(int id, int fd)
{
	struct rank r = { .id = id };
	struct record rec = { 0 };
	int ret = open_rank(&r);
	if (!ret) {
		size_t len = sizeof rec.name;
		ret = fi_getname(&r.ep->fid, rec.name, &len);
		rec.len = (uint32_t)len;
		if (ret)
			FT_PRINTERR("fi_getname", ret);
	}
	rec.status = ret;
	/* Everyone learns everyone's status: one rank that cannot run stops all. */
	struct record all[MAX_RANKS];
	if (!write_all(fd, &rec, sizeof rec) || !read_all(fd, all, sizeof all[0] * (size_t)nranks)) {
		FT_ERR("rank %d: name exchange failed", id);
		close_rank(&r);
		return -FI_EOTHER;
	}
	for (int i = 0; i < nranks && !ret; i++)
		if (all[i].status)
			ret = all[i].status;
	struct group whole = { .name = "all ranks" }, half = { .name = "every second rank" };
	int cases = 0;
	for (int i = 0; i < nranks && !ret; i++) {
		fi_addr_t a = FI_ADDR_NOTAVAIL;
		if (fi_av_insert(r.av, all[i].name, 1, &a, 0, NULL) != 1 || a != (fi_addr_t)i) {
			FT_ERR("rank %d: fi_av_insert of rank %d gave %lu", id, i, (unsigned long)a);
			ret = -FI_EOTHER;
		}
		whole.members[whole.size++] = i;
		if (i % 2 == 0)
			half.members[half.size++] = i;
	}
	whole.me = id;
	half.me = id / 2;
	if (!ret)
		ret = join(&r, &whole, 1);
	if (!ret && id % 2 == 0)
		ret = join(&r, &half, 2);
	/* Every join done everywhere before the first collective. */
	if (!ret)
		ret = run_barriers(&r, &whole);
	if (!ret)
		ret = run_group(&r, &whole, &cases);
	if (!ret && id % 2 == 0)
		ret = run_group(&r, &half, &cases);
	if (!ret)
		ret = check_unsupported(&r, &whole);
	/* Nobody leaves while another still needs its messages. */
	if (!ret)
		ret = run_barriers(&r, &whole);
	if (!ret && id == 0)
		printf("%d ranks: rank 0 passed %d collective cases over both groups\n", nranks,
		       cases);
	close_group(&half);
	close_group(&whole);
	close_rank(&r);
	return ret;
}

static int exit_code(int ret)
{
	if (ret == 0)
		return FT_EXIT_PASS;
	if (ret == -FI_ENODATA)
		return FT_EXIT_NODATA;
	if (ret == -FI_ENOSYS)
		return FT_EXIT_NOSYS;
	return FT_EXIT_FAIL;
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "p:n:s:T:c:x:h")) != -1) {
		switch (opt) {
		case 'p': prov_name = optarg; break;
		case 'n': nranks = atoi(optarg); break;
		case 's': src_addr = optarg; break;
		case 'T': timeout_sec = atoi(optarg); break;
		case 'c': count = (size_t)atol(optarg); break;
		case 'x': break; /* no cases to skip */
		default:
			fprintf(stderr, "usage: %s -p PROVIDER [-n RANKS] [-s ADDR] [-T SECONDS] "
				"[-c COUNT]\n", argv[0]);
			return FT_EXIT_FAIL;
		}
	}
	if (!prov_name || nranks < 1 || nranks > MAX_RANKS || timeout_sec < 1 || count < 1 ||
	    count > 64) {
		fprintf(stderr, "need -p PROVIDER, 1 <= -n <= %d, -T >= 1, 1 <= -c <= 64\n",
			MAX_RANKS);
		return FT_EXIT_FAIL;
	}
	int fds[MAX_RANKS];
	pid_t pids[MAX_RANKS];
	for (int i = 0; i < nranks; i++) {
		int sv[2];
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv)) {
			perror("socketpair");
			return FT_EXIT_FAIL;
		}
		pids[i] = fork();
		if (pids[i] < 0) {
			perror("fork");
			return FT_EXIT_FAIL;
		}
		if (pids[i] == 0) {
			close(sv[0]);
			for (int j = 0; j < i; j++)
				close(fds[j]);
			/* A rank that hangs in spite of its own timeouts ends here. */
			alarm((unsigned)timeout_sec * 10);
			int code = exit_code(run_rank(i, sv[1]));
			fflush(NULL); /* _exit skips stdio */
			_exit(code);
		}
		close(sv[1]);
		fds[i] = sv[0];
	}
	/* Collect every rank's record, then give everyone all of them. */
	struct record all[MAX_RANKS];
	bool exchanged = true;
	for (int i = 0; i < nranks; i++)
		exchanged = exchanged && read_all(fds[i], &all[i], sizeof all[i]);
	for (int i = 0; i < nranks; i++) {
		if (exchanged)
			write_all(fds[i], all, sizeof all[0] * (size_t)nranks);
		close(fds[i]);
	}
	int result = FT_EXIT_PASS;
	for (int i = 0; i < nranks; i++) {
		int status = 0;
		waitpid(pids[i], &status, 0);
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : FT_EXIT_FAIL;
		if (WIFSIGNALED(status))
			FT_ERR("rank %d killed by signal %d", i, WTERMSIG(status));
		if (code == FT_EXIT_FAIL || (code != FT_EXIT_PASS && result == FT_EXIT_PASS))
			result = code;
		else if (code != FT_EXIT_PASS && result != FT_EXIT_FAIL)
			result = code;
	}
	if (!exchanged) {
		FT_ERR("a rank died before the name exchange");
		result = FT_EXIT_FAIL;
	}
	return result;
}
