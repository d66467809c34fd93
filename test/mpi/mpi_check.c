/* MPI check run by Open MPI over the ofi MTL and our tcp;ofi_rxm provider.
 * Every rank verifies the contents it receives; any mismatch makes the program
 * exit non-zero (MPI_Abort), so mpirun fails and the test with it. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

static int rank, size;
static int failures;
static int trace; /* MPI_CHECK_TRACE=1: print each phase, to locate a hang */

#define PHASE(name)                                                         \
	do {                                                                \
		if (trace)                                                  \
			fprintf(stderr, "rank %d: phase %s\n", rank, name); \
	} while (0)

#define CHECK(cond, ...)                                                    \
	do {                                                                \
		if (!(cond)) {                                              \
			fprintf(stderr, "rank %d: %s:%d: ", rank, __FILE__, \
				__LINE__);                                  \
			fprintf(stderr, __VA_ARGS__);                       \
			fprintf(stderr, "\n");                              \
			failures++;                                         \
		}                                                           \
	} while (0)

/* Byte pattern that depends on the sender, a per-message salt and the
 * offset, so a misplaced, truncated or mixed-up payload is detected. */
static unsigned char pattern(int sender, int salt, size_t i)
{
	return (unsigned char)((sender * 131 + salt * 17 + i * 7 + (i >> 12)) & 0xff);
}

static void fill(unsigned char *buf, size_t len, int sender, int salt)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = pattern(sender, salt, i);
}

static size_t first_mismatch(const unsigned char *buf, size_t len, int sender, int salt)
{
	for (size_t i = 0; i < len; i++)
		if (buf[i] != pattern(sender, salt, i))
			return i;
	return len;
}

/* Ring exchange: each rank sends to rank+1 and receives from rank-1. */
static void ring_exchange(size_t len, int tag)
{
	int next = (rank + 1) % size, prev = (rank + size - 1) % size;
	unsigned char *out = malloc(len ? len : 1), *in = malloc(len ? len : 1);
	MPI_Status st;
	int count;

	fill(out, len, rank, tag);
	memset(in, 0, len ? len : 1);
	MPI_Sendrecv(out, (int)len, MPI_BYTE, next, tag, in, (int)len, MPI_BYTE, prev, tag,
		     MPI_COMM_WORLD, &st);
	MPI_Get_count(&st, MPI_BYTE, &count);
	CHECK((size_t)count == len, "ring len %zu: got count %d", len, count);
	CHECK(st.MPI_SOURCE == prev, "ring len %zu: source %d, want %d", len, st.MPI_SOURCE, prev);
	size_t bad = first_mismatch(in, len, prev, tag);
	CHECK(bad == len, "ring len %zu: mismatch at byte %zu", len, bad);
	free(out);
	free(in);
}

/* Every non-root rank sends to rank 0, which receives with MPI_ANY_SOURCE
 * and must see each sender exactly once with that sender's payload. */
static void any_source_gather(size_t len, int tag)
{
	unsigned char *buf = malloc(len ? len : 1);
	if (rank != 0) {
		fill(buf, len, rank, tag);
		MPI_Send(buf, (int)len, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
	} else {
		int *seen = calloc((size_t)size, sizeof(int));
		for (int n = 1; n < size; n++) {
			MPI_Status st;
			int count;
			memset(buf, 0, len ? len : 1);
			MPI_Recv(buf, (int)len, MPI_BYTE, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &st);
			MPI_Get_count(&st, MPI_BYTE, &count);
			CHECK(st.MPI_SOURCE > 0 && st.MPI_SOURCE < size, "any-source: bad source %d",
			      st.MPI_SOURCE);
			if (st.MPI_SOURCE <= 0 || st.MPI_SOURCE >= size)
				continue;
			seen[st.MPI_SOURCE]++;
			CHECK((size_t)count == len, "any-source len %zu: count %d", len, count);
			size_t bad = first_mismatch(buf, len, st.MPI_SOURCE, tag);
			CHECK(bad == len, "any-source len %zu from %d: mismatch at %zu", len,
			      st.MPI_SOURCE, bad);
		}
		for (int r = 1; r < size; r++)
			CHECK(seen[r] == 1, "any-source: rank %d seen %d times", r, seen[r]);
		free(seen);
	}
	free(buf);
}

/* Rank 1 sends several tags in one order; rank 0 receives them in reverse
 * order, so tag matching (not arrival order) must pick each message. */
static void tagged_out_of_order(size_t len)
{
	enum { NTAGS = 5 };
	if (rank > 1)
		return;
	unsigned char *bufs[NTAGS];
	MPI_Request reqs[NTAGS];
	for (int t = 0; t < NTAGS; t++)
		bufs[t] = malloc(len ? len : 1);
	if (rank == 1) {
		for (int t = 0; t < NTAGS; t++) {
			fill(bufs[t], len, rank, 100 + t);
			MPI_Isend(bufs[t], (int)len, MPI_BYTE, 0, 100 + t, MPI_COMM_WORLD, &reqs[t]);
		}
		MPI_Waitall(NTAGS, reqs, MPI_STATUSES_IGNORE);
	} else {
		for (int t = NTAGS - 1; t >= 0; t--) {
			MPI_Status st;
			memset(bufs[t], 0, len ? len : 1);
			MPI_Recv(bufs[t], (int)len, MPI_BYTE, 1, 100 + t, MPI_COMM_WORLD, &st);
			CHECK(st.MPI_TAG == 100 + t, "tagged: got tag %d want %d", st.MPI_TAG, 100 + t);
			size_t bad = first_mismatch(bufs[t], len, 1, 100 + t);
			CHECK(bad == len, "tagged len %zu tag %d: mismatch at %zu", len, 100 + t, bad);
		}
	}
	for (int t = 0; t < NTAGS; t++)
		free(bufs[t]);
}

/* MPI_ANY_TAG with a probe first: the status must report the real tag and size. */
static void probe_any_tag(void)
{
	if (size < 2 || rank > 1)
		return;
	const int len = 1000, tag = 4242;
	unsigned char buf[1000];
	if (rank == 1) {
		fill(buf, len, 1, tag);
		MPI_Send(buf, len, MPI_BYTE, 0, tag, MPI_COMM_WORLD);
	} else {
		MPI_Status st;
		int count;
		MPI_Probe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		MPI_Get_count(&st, MPI_BYTE, &count);
		CHECK(st.MPI_TAG == tag && count == len, "probe: tag %d count %d", st.MPI_TAG,
		      count);
		MPI_Recv(buf, len, MPI_BYTE, 1, st.MPI_TAG, MPI_COMM_WORLD, &st);
		CHECK(first_mismatch(buf, len, 1, tag) == (size_t)len, "probe: payload mismatch");
	}
}

/* Open MPI loads libfabric.so.1 by soname; if the system's copy won the
 * lookup, this run would test Debian's libfabric, not ours. When
 * MPI_CHECK_LIBFABRIC_DIR is set, every libfabric mapped into this process
 * must come from that directory, and at least one must be mapped. */
static void check_loaded_libfabric(void)
{
	const char *want = getenv("MPI_CHECK_LIBFABRIC_DIR");
	char dir[PATH_MAX], line[PATH_MAX + 256];
	int ours = 0;

	if (!want)
		return;
	if (!realpath(want, dir)) {
		CHECK(0, "cannot resolve MPI_CHECK_LIBFABRIC_DIR=%s", want);
		return;
	}
	FILE *maps = fopen("/proc/self/maps", "r");
	if (!maps) {
		CHECK(0, "cannot open /proc/self/maps");
		return;
	}
	while (fgets(line, sizeof(line), maps)) {
		const char *path = strchr(line, '/');
		if (!path || !strstr(path, "/libfabric.so"))
			continue;
		if (strncmp(path, dir, strlen(dir)) == 0 && path[strlen(dir)] == '/')
			ours = 1;
		else
			CHECK(0, "foreign libfabric mapped: %s", path);
	}
	fclose(maps);
	CHECK(ours, "no libfabric from %s is mapped", dir);
}

static void collectives(void)
{
	MPI_Barrier(MPI_COMM_WORLD);

	/* Bcast of 1 MiB from the last rank. */
	size_t blen = 1 << 20;
	unsigned char *b = malloc(blen);
	int root = size - 1;
	if (rank == root)
		fill(b, blen, root, 7);
	else
		memset(b, 0, blen);
	MPI_Bcast(b, (int)blen, MPI_BYTE, root, MPI_COMM_WORLD);
	CHECK(first_mismatch(b, blen, root, 7) == blen, "bcast mismatch");
	free(b);

	/* Allreduce: sum and max of values known to every rank. */
	enum { N = 4096 };
	long *v = malloc(N * sizeof(long)), *sum = malloc(N * sizeof(long));
	for (int i = 0; i < N; i++)
		v[i] = (long)rank * 1000 + i;
	MPI_Allreduce(v, sum, N, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	for (int i = 0; i < N; i++) {
		long want = 1000L * size * (size - 1) / 2 + (long)i * size;
		if (sum[i] != want) {
			CHECK(0, "allreduce sum[%d] = %ld want %ld", i, sum[i], want);
			break;
		}
	}
	int mine = rank * 3 + 1, max = -1;
	MPI_Allreduce(&mine, &max, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	CHECK(max == (size - 1) * 3 + 1, "allreduce max %d", max);
	free(v);
	free(sum);

	/* Alltoall: element j of rank i's send buffer goes to rank j. */
	enum { PER = 1024 };
	int *s = malloc((size_t)size * PER * sizeof(int)), *r = malloc((size_t)size * PER * sizeof(int));
	for (int j = 0; j < size; j++)
		for (int k = 0; k < PER; k++)
			s[j * PER + k] = rank * 1000000 + j * 10000 + k;
	MPI_Alltoall(s, PER, MPI_INT, r, PER, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < size; i++)
		for (int k = 0; k < PER; k++)
			if (r[i * PER + k] != i * 1000000 + rank * 10000 + k) {
				CHECK(0, "alltoall from %d elem %d: %d", i, k, r[i * PER + k]);
				i = size;
				break;
			}
	free(s);
	free(r);

	/* Gather + scatter of rank ids, and a reduce to rank 0. */
	int *all = malloc((size_t)size * sizeof(int));
	MPI_Allgather(&rank, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
	for (int i = 0; i < size; i++)
		CHECK(all[i] == i, "allgather[%d] = %d", i, all[i]);
	int got = -1;
	for (int i = 0; i < size; i++)
		all[i] = i * i;
	MPI_Scatter(all, 1, MPI_INT, &got, 1, MPI_INT, 0, MPI_COMM_WORLD);
	CHECK(got == rank * rank, "scatter got %d", got);
	long one = rank + 1, total = 0;
	MPI_Reduce(&one, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		CHECK(total == (long)size * (size + 1) / 2, "reduce total %ld", total);
	free(all);
	MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		fprintf(stderr, "mpi_check needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	trace = getenv("MPI_CHECK_TRACE") != NULL;
	check_loaded_libfabric();

	const size_t small = 64, mid = 64 * 1024, large = 4u << 20;
	PHASE("ring 0");
	ring_exchange(0, 1);
	PHASE("ring small");
	ring_exchange(small, 2);
	PHASE("ring mid");
	ring_exchange(mid, 3);
	PHASE("ring large");
	ring_exchange(large, 4);
	PHASE("any-source small");
	any_source_gather(small, 10);
	PHASE("any-source large");
	any_source_gather(large, 11);
	PHASE("tagged small");
	tagged_out_of_order(small);
	PHASE("tagged large");
	tagged_out_of_order(large);
	PHASE("probe");
	probe_any_tag();
	PHASE("collectives");
	collectives();

	PHASE("final allreduce");
	int all_failures = 0;
	MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi_check: %d ranks, %d failures\n", size, all_failures);
	MPI_Finalize();
	return all_failures ? 1 : 0;
}
