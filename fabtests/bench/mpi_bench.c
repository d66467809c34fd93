/*
 * mpi_bench: MPI ping-pong latency and windowed message rate between ranks 0 and 1 (issue 19:
 * what an MPI user gets through each transport). Plain MPI, so the same binary runs over the
 * ofi MTL with any libfabric.so.1, over Open MPI's own BTLs and over UCX.
 *
 * usage: mpirun -np 2 mpi_bench [-i ITERS] [-w WINDOW] [-m MAX_SIZE] [-l]
 *
 * Prints one line per size, from rank 0:
 *   size S lat_us L rate_mps R
 * lat_us is half the round trip of a blocking MPI_Send/MPI_Recv ping-pong (the median of
 * five runs of ITERS round trips, after a warm-up); rate_mps is millions of messages per
 * second rank 0 sends to rank 1 in windows of WINDOW MPI_Isend (rank 1 posts as many
 * MPI_Irecv), one 4-byte reply per window, also the median of five. -l runs the ping-pong
 * only (rate_mps 0): what a per-message count of system calls or context switches needs.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kRuns = 5, kMaxWindow = 1024 };

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Each rank sends from sbuf and receives into rbuf, as the OSU and Intel MPI Benchmarks
 * ping-pongs do. Receiving into the buffer it sends from next made every single-copy
 * (process_vm_readv) transport pay for the other core's dirty cache lines: 64 KiB between
 * two ranks of one host took 11.6 us instead of 4.5 over vader and over ours alike. */
static double pingpong_us(int rank, char *sbuf, char *rbuf, int size, int iters)
{
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	for (int i = 0; i < iters; i++) {
		if (rank == 0) {
			MPI_Send(sbuf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(rbuf, size, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(rbuf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			MPI_Send(sbuf, size, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
		}
	}
	return (MPI_Wtime() - start) * 1e6 / (2.0 * iters);
}

static double rate_mps(int rank, char *sbuf, char *rbuf, int size, int iters, int window)
{
	MPI_Request req[kMaxWindow];
	int ack = 0;
	int windows = iters / window > 0 ? iters / window : 1;
	MPI_Barrier(MPI_COMM_WORLD);
	double start = MPI_Wtime();
	for (int w = 0; w < windows; w++) {
		for (int i = 0; i < window; i++) {
			if (rank == 0)
				MPI_Isend(sbuf, size, MPI_CHAR, 1, 2, MPI_COMM_WORLD, &req[i]);
			else
				MPI_Irecv(rbuf, size, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &req[i]);
		}
		MPI_Waitall(window, req, MPI_STATUSES_IGNORE);
		if (rank == 0)
			MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		else
			MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
	}
	double secs = MPI_Wtime() - start;
	return (double)windows * window / secs / 1e6;
}

int main(int argc, char **argv)
{
	int iters = 10000, window = 64, max_size = 65536, rank, ranks, opt, latency_only = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &ranks);
	while ((opt = getopt(argc, argv, "i:w:m:l")) != -1) {
		if (opt == 'i')
			iters = atoi(optarg);
		else if (opt == 'w')
			window = atoi(optarg);
		else if (opt == 'm')
			max_size = atoi(optarg);
		else if (opt == 'l')
			latency_only = 1;
	}
	if (ranks != 2 || iters < 1 || window < 1 || window > kMaxWindow || max_size < 0) {
		if (rank == 0)
			fprintf(stderr, "mpi_bench: needs 2 ranks, -i >= 1, 1 <= -w <= %d\n",
				kMaxWindow);
		MPI_Finalize();
		return 2;
	}
	char *sbuf = calloc(1, (size_t)max_size + 1), *rbuf = calloc(1, (size_t)max_size + 1);
	for (int size = 0; size <= max_size && sbuf && rbuf; size = size ? size * 4 : 1) {
		/* large messages: fewer iterations, same order of total time */
		int n = size > 4096 ? iters / 10 + 1 : iters;
		double lat[kRuns], rate[kRuns];
		pingpong_us(rank, sbuf, rbuf, size, n / 10 + 1);
		for (int r = 0; r < kRuns; r++) {
			lat[r] = pingpong_us(rank, sbuf, rbuf, size, n);
			rate[r] = latency_only ? 0 : rate_mps(rank, sbuf, rbuf, size, n, window);
		}
		if (rank == 0)
			printf("size %d lat_us %.2f rate_mps %.4f\n", size, median(lat, kRuns),
			       median(rate, kRuns));
		fflush(stdout);
	}
	free(sbuf);
	free(rbuf);
	MPI_Finalize();
	return 0;
}
