/*
 * fi_rdm_atomic: every atomic operation the provider reports through fi_query_atomic,
 * for every datatype up to FI_LONG_DOUBLE_COMPLEX (the 128-bit integers have no C type
 * here), in its base, fetch and compare forms. For each case the server fills the target
 * with a known vector, the client runs the operation on COUNT elements, the server checks
 * the target against the result computed here from fi_atomic(3)'s definitions, and the
 * client checks the fetched initial values. Each case runs in three forms: the plain call,
 * the vector call (fi_atomicv and friends, operands, compare values and results split over
 * several iocs) and the msg call (fi_atomicmsg and friends, with the target split over two
 * rma iocs as well). Data mismatches are all reported; the first transport error stops the
 * test. A provider that reports no atomics is "not run".
 */
#include "../common/shared.h"

#include <complex.h>
#include <rdma/fi_atomic.h>
#include <stdlib.h>
#include <string.h>

#define COUNT 4
#define ELEM_MAX 32  /* sizeof(long double complex) */
#define KINDS 3

enum kind { BASE, FETCH, COMPARE };
static const char *kind_names[KINDS] = { "atomic", "fetch_atomic", "compare_atomic" };
#define FORMS 3
enum form { PLAIN, VECTOR, MSG };
static const char *form_names[FORMS] = { "", "v", "msg" };
#define MAX_IOCS 4  /* fi_atomic(3) lets a provider take fewer; ours and 1.17's rxm take 4 */
static const uint64_t kind_flags[KINDS] = { 0, FI_FETCH_ATOMIC, FI_COMPARE_ATOMIC };

struct vectors {
	unsigned char target[COUNT * ELEM_MAX];
	unsigned char operand[COUNT * ELEM_MAX];
	unsigned char compare[COUNT * ELEM_MAX];
};

struct type_ops {
	enum fi_datatype dt;
	const char *name;
	size_t size;
	void (*init)(struct vectors *v);
	/* Applies op to v->target; -FI_EOPNOTSUPP when fi_atomic(3) does not define it. */
	int (*apply)(enum fi_op op, struct vectors *v);
	bool (*equal)(const void *a, const void *b, size_t n);  /* compares values, not padding */
};

/* Targets mix zeros (for the logical ops) and values; compares equal every odd element. */
#define INIT_FN(name, T, MAKE)                                                   \
	static void init_##name(struct vectors *v)                               \
	{                                                                        \
		T *t = (T *)v->target, *o = (T *)v->operand, *c = (T *)v->compare; \
		for (int i = 0; i < COUNT; i++) {                                \
			t[i] = i % 3 == 0 ? MAKE(0) : MAKE(10 + i);              \
			o[i] = i % 2 == 0 ? MAKE(0) : MAKE(3 + i);               \
			c[i] = i % 2 ? t[i] : t[i] + MAKE(1);                    \
		}                                                                \
	}                                                                        \
	static bool equal_##name(const void *a, const void *b, size_t n)        \
	{                                                                        \
		const T *x = a, *y = b;                                          \
		for (size_t i = 0; i < n; i++)                                   \
			if (!(x[i] == y[i]))                                     \
				return false;                                    \
		return true;                                                     \
	}

#define COMMON_CASES(T)                                                                  \
	case FI_SUM: t[i] = t[i] + o[i]; break;                                          \
	case FI_PROD: t[i] = t[i] * o[i]; break;                                         \
	case FI_LOR: t[i] = (T)((t[i] != 0) || (o[i] != 0)); break;                      \
	case FI_LAND: t[i] = (T)((t[i] != 0) && (o[i] != 0)); break;                     \
	case FI_LXOR: t[i] = (T)((t[i] != 0 && o[i] == 0) || (t[i] == 0 && o[i] != 0)); break; \
	case FI_ATOMIC_READ: break;                                                      \
	case FI_ATOMIC_WRITE: t[i] = o[i]; break;                                        \
	case FI_CSWAP: if (c[i] == t[i]) t[i] = o[i]; break;                             \
	case FI_CSWAP_NE: if (c[i] != t[i]) t[i] = o[i]; break;

#define ORDERED_CASES                                                \
	case FI_MIN: if (o[i] < t[i]) t[i] = o[i]; break;            \
	case FI_MAX: if (o[i] > t[i]) t[i] = o[i]; break;            \
	case FI_CSWAP_LE: if (c[i] <= t[i]) t[i] = o[i]; break;      \
	case FI_CSWAP_LT: if (c[i] < t[i]) t[i] = o[i]; break;       \
	case FI_CSWAP_GE: if (c[i] >= t[i]) t[i] = o[i]; break;      \
	case FI_CSWAP_GT: if (c[i] > t[i]) t[i] = o[i]; break;

#define BITWISE_CASES                                                \
	case FI_BOR: t[i] = t[i] | o[i]; break;                      \
	case FI_BAND: t[i] = t[i] & o[i]; break;                     \
	case FI_BXOR: t[i] = t[i] ^ o[i]; break;                     \
	case FI_MSWAP: t[i] = (o[i] & c[i]) | (t[i] & ~c[i]); break;

#define APPLY_FN(name, T, CASES)                                                  \
	static int apply_##name(enum fi_op op, struct vectors *v)                 \
	{                                                                         \
		T *t = (T *)v->target;                                            \
		const T *o = (const T *)v->operand, *c = (const T *)v->compare;   \
		(void)c;                                                          \
		for (int i = 0; i < COUNT; i++) {                                 \
			switch (op) {                                             \
			CASES                                                     \
			default: return -FI_EOPNOTSUPP;                           \
			}                                                         \
		}                                                                 \
		return 0;                                                         \
	}

#define REAL(x) (x)
#define CPLX(x) ((x) + (x) * I)

#define INT_TYPE(name, T) \
	INIT_FN(name, T, REAL) APPLY_FN(name, T, COMMON_CASES(T) ORDERED_CASES BITWISE_CASES)
#define FLOAT_TYPE(name, T) INIT_FN(name, T, REAL) APPLY_FN(name, T, COMMON_CASES(T) ORDERED_CASES)
#define COMPLEX_TYPE(name, T) INIT_FN(name, T, CPLX) APPLY_FN(name, T, COMMON_CASES(T))

INT_TYPE(int8, int8_t)
INT_TYPE(uint8, uint8_t)
INT_TYPE(int16, int16_t)
INT_TYPE(uint16, uint16_t)
INT_TYPE(int32, int32_t)
INT_TYPE(uint32, uint32_t)
INT_TYPE(int64, int64_t)
INT_TYPE(uint64, uint64_t)
FLOAT_TYPE(float, float)
FLOAT_TYPE(double, double)
COMPLEX_TYPE(float_complex, float complex)
COMPLEX_TYPE(double_complex, double complex)
FLOAT_TYPE(long_double, long double)
COMPLEX_TYPE(long_double_complex, long double complex)

#define TYPE(dt, name, T) { dt, #dt, sizeof(T), init_##name, apply_##name, equal_##name }
static const struct type_ops types[] = {
	TYPE(FI_INT8, int8, int8_t),
	TYPE(FI_UINT8, uint8, uint8_t),
	TYPE(FI_INT16, int16, int16_t),
	TYPE(FI_UINT16, uint16, uint16_t),
	TYPE(FI_INT32, int32, int32_t),
	TYPE(FI_UINT32, uint32, uint32_t),
	TYPE(FI_INT64, int64, int64_t),
	TYPE(FI_UINT64, uint64, uint64_t),
	TYPE(FI_FLOAT, float, float),
	TYPE(FI_DOUBLE, double, double),
	TYPE(FI_FLOAT_COMPLEX, float_complex, float complex),
	TYPE(FI_DOUBLE_COMPLEX, double_complex, double complex),
	TYPE(FI_LONG_DOUBLE, long_double, long double),
	TYPE(FI_LONG_DOUBLE_COMPLEX, long_double_complex, long double complex),
};
#define NUM_TYPES (sizeof(types) / sizeof(types[0]))

static const char *op_name(enum fi_op op)
{
	static const char *names[] = { "FI_MIN", "FI_MAX", "FI_SUM", "FI_PROD", "FI_LOR",
		"FI_LAND", "FI_BOR", "FI_BAND", "FI_LXOR", "FI_BXOR", "FI_ATOMIC_READ",
		"FI_ATOMIC_WRITE", "FI_CSWAP", "FI_CSWAP_NE", "FI_CSWAP_LE", "FI_CSWAP_LT",
		"FI_CSWAP_GE", "FI_CSWAP_GT", "FI_MSWAP" };
	return op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

/* The operations each form accepts (fi_atomic(3)). */
static bool op_fits_kind(enum fi_op op, int kind)
{
	if (kind == COMPARE)
		return op >= FI_CSWAP && op <= FI_MSWAP;
	if (op == FI_ATOMIC_READ)
		return kind == FETCH;
	return op <= FI_ATOMIC_WRITE;
}

struct atomic_case {
	int32_t type_index;  /* -1 ends the test */
	int32_t op;
	int32_t kind;
	int32_t count;
	int32_t form;
};

/* Client: which cases exist, from fi_query_atomic. */
static int supported(const struct type_ops *t, enum fi_op op, int kind, size_t *count)
{
	struct fi_atomic_attr attr = { 0 };
	int ret = fi_query_atomic(ft.domain, t->dt, op, &attr, kind_flags[kind]);
	if (ret)
		return ret;
	FT_EXPECT(attr.size == t->size, "%s: fi_query_atomic reports size %zu, want %zu",
		  t->name, attr.size, t->size);
	FT_EXPECT(attr.count >= 1, "%s %s: fi_query_atomic reports count 0", t->name,
		  op_name(op));
	*count = attr.count < COUNT ? attr.count : COUNT;
	return 0;
}

/* Splits n elements of size bytes at base into iocs: one element each, the last taking
 * the rest ('first' > 0 instead makes the first ioc that long and the second the rest). */
static size_t split(void *base, size_t n, size_t size, size_t first, struct fi_ioc *iov)
{
	size_t count = 0, done = 0;
	while (done < n && count < MAX_IOCS) {
		size_t take = count == MAX_IOCS - 1 ? n - done : 1;
		if (first)
			take = count == 0 && first < n ? first : n - done;
		iov[count].addr = (unsigned char *)base + done * size;
		iov[count].count = take;
		done += take;
		count++;
	}
	return count;
}

static int post_plain(const struct atomic_case *c, struct vectors *v, void *result, void *ctx)
{
	const struct type_ops *t = &types[c->type_index];
	enum fi_op op = (enum fi_op)c->op;
	size_t n = (size_t)c->count;
	switch (c->kind) {
	case BASE:
		FT_RETRY_POST(fi_atomic(ft.ep, v->operand, n, ft.mr_desc, ft.remote_addr,
					ft.remote.addr, ft.remote.key, t->dt, op, ctx), "fi_atomic");
		break;
	case FETCH:
		FT_RETRY_POST(fi_fetch_atomic(ft.ep, v->operand, n, ft.mr_desc, result, ft.mr_desc,
					      ft.remote_addr, ft.remote.addr, ft.remote.key, t->dt,
					      op, ctx), "fi_fetch_atomic");
		break;
	default:
		FT_RETRY_POST(fi_compare_atomic(ft.ep, v->operand, n, ft.mr_desc, v->compare,
						ft.mr_desc, result, ft.mr_desc, ft.remote_addr,
						ft.remote.addr, ft.remote.key, t->dt, op, ctx),
			      "fi_compare_atomic");
		break;
	}
	return 0;
}

static int post_vector(const struct atomic_case *c, struct vectors *v, void *result, void *ctx)
{
	const struct type_ops *t = &types[c->type_index];
	enum fi_op op = (enum fi_op)c->op;
	size_t n = (size_t)c->count;
	struct fi_ioc iov[MAX_IOCS], cmp[MAX_IOCS], res[MAX_IOCS];
	void *desc[MAX_IOCS] = { ft.mr_desc, ft.mr_desc, ft.mr_desc, ft.mr_desc };
	size_t iov_count = split(v->operand, n, t->size, 0, iov);
	size_t cmp_count = split(v->compare, n, t->size, n / 2, cmp);
	size_t res_count = split(result, n, t->size, (n + 1) / 2, res);
	struct fi_rma_ioc rma[2] = {
		{ ft.remote.addr, n > 1 ? 1 : n, ft.remote.key },
		{ ft.remote.addr + t->size, n - 1, ft.remote.key },
	};
	struct fi_msg_atomic msg = {
		.msg_iov = iov, .desc = desc, .iov_count = iov_count, .addr = ft.remote_addr,
		.rma_iov = rma, .rma_iov_count = n > 1 ? 2 : 1, .datatype = t->dt, .op = op,
		.context = ctx,
	};
	switch (c->kind * FORMS + c->form) {
	case BASE * FORMS + VECTOR:
		FT_RETRY_POST(fi_atomicv(ft.ep, iov, desc, iov_count, ft.remote_addr,
					 ft.remote.addr, ft.remote.key, t->dt, op, ctx),
			      "fi_atomicv");
		break;
	case BASE * FORMS + MSG:
		FT_RETRY_POST(fi_atomicmsg(ft.ep, &msg, FI_COMPLETION), "fi_atomicmsg");
		break;
	case FETCH * FORMS + VECTOR:
		FT_RETRY_POST(fi_fetch_atomicv(ft.ep, iov, desc, iov_count, res, desc, res_count,
					       ft.remote_addr, ft.remote.addr, ft.remote.key,
					       t->dt, op, ctx), "fi_fetch_atomicv");
		break;
	case FETCH * FORMS + MSG:
		FT_RETRY_POST(fi_fetch_atomicmsg(ft.ep, &msg, res, desc, res_count, FI_COMPLETION),
			      "fi_fetch_atomicmsg");
		break;
	case COMPARE * FORMS + VECTOR:
		FT_RETRY_POST(fi_compare_atomicv(ft.ep, iov, desc, iov_count, cmp, desc, cmp_count,
						 res, desc, res_count, ft.remote_addr,
						 ft.remote.addr, ft.remote.key, t->dt, op, ctx),
			      "fi_compare_atomicv");
		break;
	default:
		FT_RETRY_POST(fi_compare_atomicmsg(ft.ep, &msg, cmp, desc, cmp_count, res, desc,
						   res_count, FI_COMPLETION),
			      "fi_compare_atomicmsg");
		break;
	}
	return 0;
}

static int post(const struct atomic_case *c, struct vectors *v, void *result)
{
	void *ctx = &ft.tx_ctx[0];
	if (c->form == PLAIN)
		FT_CHECK(post_plain(c, v, result, ctx));
	else
		FT_CHECK(post_vector(c, v, result, ctx));
	ft.tx_posted++;
	return ft_get_tx_comp(ft.tx_posted);
}

/* Vectors live in the registered transfer buffers (FI_MR_LOCAL needs descriptors). */
static struct vectors *client_vectors(void)
{
	return (struct vectors *)ft.tx_buf;
}

static void *client_result(void)
{
	return ft.tx_buf + sizeof(struct vectors);
}

static int client_case(const struct atomic_case *c)
{
	const struct type_ops *t = &types[c->type_index];
	struct vectors *v = client_vectors();
	void *result = client_result();
	t->init(v);
	memset(result, 0, COUNT * ELEM_MAX);
	FT_CHECK(ft_oob_sync());  /* the target is initialised */
	FT_CHECK(post(c, v, result));
	if (c->kind != BASE && !t->equal(result, v->target, (size_t)c->count)) {
		FT_ERR("%s%s %s %s: fetched values are not the target's initial ones",
		       kind_names[c->kind], form_names[c->form], op_name((enum fi_op)c->op),
		       t->name);
		return -FI_EIO;
	}
	return 0;
}

static int server_check(const struct atomic_case *c)
{
	const struct type_ops *t = &types[c->type_index];
	struct vectors expected;
	memset(&expected, 0, sizeof(expected));
	t->init(&expected);
	int ret = t->apply((enum fi_op)c->op, &expected);
	if (ret) {
		FT_ERR("%s %s %s: the provider reports an operation fi_atomic(3) does not define "
		       "for this type", kind_names[c->kind], op_name((enum fi_op)c->op), t->name);
		return -FI_EIO;
	}
	/* Elements past the operation's count must stay as they were. */
	size_t done = (size_t)c->count * t->size;
	struct vectors initial;
	memset(&initial, 0, sizeof(initial));
	t->init(&initial);
	memcpy(expected.target + done, initial.target + done, COUNT * t->size - done);
	if (!t->equal(ft.rx_buf, expected.target, COUNT)) {
		FT_ERR("%s%s %s %s: the target holds a wrong result", kind_names[c->kind],
		       form_names[c->form], op_name((enum fi_op)c->op), t->name);
		return -FI_EIO;
	}
	return 0;
}

/* Both sides report their check (the client first); returns the worse one. */
static int client_verdict(int mine)
{
	int32_t m = mine, theirs = 0;
	FT_CHECK(ft_oob_exchange(&m, &theirs, sizeof(m)));
	return mine ? mine : theirs;
}

/* Server: drives progress (manual-progress providers run the atomic here) until the
 * client's verdict says the operation completed, then checks the target. */
static int server_verdict(const struct atomic_case *c)
{
	int32_t theirs = 0;
	FT_CHECK(ft_progress_until_oob_readable());
	FT_CHECK(ft_oob_recv(&theirs, sizeof(theirs)));
	int32_t mine = theirs && theirs != -FI_EIO ? theirs : server_check(c);
	FT_CHECK(ft_oob_send(&mine, sizeof(mine)));
	return mine ? mine : theirs;
}

static int server(void)
{
	for (;;) {
		struct atomic_case c;
		FT_CHECK(ft_oob_recv(&c, sizeof(c)));
		if (c.type_index < 0)
			return 0;
		FT_EXPECT((size_t)c.type_index < NUM_TYPES && c.count > 0 && c.count <= COUNT &&
			  c.kind >= 0 && c.kind < KINDS && c.form >= 0 && c.form < FORMS,
			  "bad case from the client");
		struct vectors init;
		memset(&init, 0, sizeof(init));
		types[c.type_index].init(&init);
		memcpy(ft.rx_buf, init.target, sizeof(init.target));
		FT_CHECK(ft_oob_sync());
		int ret = server_verdict(&c);
		if (ret && ret != -FI_EIO)
			return ret;
	}
}

static int client(void)
{
	int cases = 0, failures = 0, ret = 0;
	for (size_t ti = 0; ti < NUM_TYPES && !ret; ti++) {
		for (int op = FI_MIN; op <= FI_MSWAP && !ret; op++) {
			for (int cell = 0; cell < KINDS * FORMS && !ret; cell++) {
				int kind = cell / FORMS, form = cell % FORMS;
				size_t count;
				if (!op_fits_kind((enum fi_op)op, kind) ||
				    supported(&types[ti], (enum fi_op)op, kind, &count))
					continue;
				struct atomic_case c = { (int32_t)ti, op, kind, (int32_t)count,
							 form };
				ft_debug("case %s%s %s %s count %zu\n", kind_names[kind],
					 form_names[form], op_name((enum fi_op)op),
					 types[ti].name, count);
				FT_CHECK(ft_oob_send(&c, sizeof(c)));
				int mine = client_case(&c);
				/* Posting failed or the completion never came: the server learns
				 * it from the verdict, and the test stops. */
				if (mine && mine != -FI_EIO)
					FT_ERR("%s%s %s %s failed", kind_names[kind],
					       form_names[form], op_name((enum fi_op)op),
					       types[ti].name);
				int v = client_verdict(mine);
				cases++;
				if (v == -FI_EIO)
					failures++;
				else if (v)
					ret = v;
			}
		}
	}
	struct atomic_case end = { -1, 0, 0, 0, 0 };
	FT_CHECK(ft_oob_send(&end, sizeof(end)));
	printf("%d atomic cases, %d failed\n", cases, failures);
	if (ret)
		return ret;
	if (cases == 0) {
		fprintf(stderr, "the provider reports no atomic operation (not run)\n");
		return -FI_ENOSYS;
	}
	return failures ? -FI_EIO : 0;
}

static int run(void)
{
	FT_CHECK(ft_exchange_rma_target());
	int ret = ft.server ? server() : client();
	/* Only the client knows whether any case ran (or failed): the server learns it here. */
	return ft_oob_agree(ret);
}

int main(int argc, char **argv)
{
	int ret = ft_parse_args(argc, argv, NULL, NULL,
				"Every atomic operation the provider reports.");
	if (ret)
		return ret > 0 ? 0 : ft_exit_code(ret);
	ft.hints->caps = FI_MSG | FI_ATOMIC;
	ft.opts.size = 4096;
	return ft_run(run);
}
