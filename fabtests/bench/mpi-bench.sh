#!/bin/sh
# mpi-bench.sh: what an MPI user gets from each transport between two ranks on one host
# (issue 19). Builds fabtests/bench/mpi_bench.c with Debian's mpicc and runs the same binary,
# transports alternating, over:
#   ours    pml cm, mtl ofi, tcp;ofi_rxm, our libfabric.so.1 ($top_builddir/.libs)
#   system  the same with the system's libfabric.so.1
#   ob1tcp  Open MPI's own tcp BTL (pml ob1, btl self,tcp on lo)
#   ucxtcp  pml ucx with UCX_TLS=tcp,self
# or, named in MPI_BENCH_TRANSPORTS, the same-host transports (issue 20):
#   ourslocal  ours over the ofi MTL on tcp;ofi_rxm with its same-host paths on (shm, CMA)
#   vader      Open MPI's shared-memory BTL (pml ob1, btl self,vader)
#   ucxsm      pml ucx with UCX_TLS=sm,self
# and prints, per transport and size, the median half round trip (us) and message rate
# (M msgs/s, windows of 64) over REPS alternating runs.
#
# usage: mpi-bench.sh [REPS]   (env: top_builddir, top_srcdir, MPI_BENCH_ARGS e.g. "-i 2000",
#                               MPI_BENCH_TRANSPORTS, default "ours system ob1tcp ucxtcp")
# ours/system are the wire path: FI_OFI_RXM_USE_CMA=0 and FI_OFI_RXM_USE_SHM=0 keep rxm's
# same-host shortcuts off, as issue 19's figures are taken. Exits 77 when mpirun/mpicc are
# missing.
set -u
: "${top_builddir:=.}"
: "${top_srcdir:=.}"
reps=${1:-3}
command -v mpirun >/dev/null 2>&1 && command -v mpicc >/dev/null 2>&1 || {
	echo "mpi-bench: Open MPI not installed; skipping"; exit 77; }
ours=$(cd "$top_builddir/.libs" && pwd) || exit 1
system=/usr/lib/x86_64-linux-gnu
work=$(mktemp -d /tmp/mpi-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpicc -O2 -o "$work/mpi_bench" "$top_srcdir/fabtests/bench/mpi_bench.c" || exit 1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

run() { # transport rep
	case $1 in
	ours | system | ourslocal)
		lib=$ours local=0
		[ "$1" = system ] && lib=$system
		[ "$1" = ourslocal ] && local=1
		set -- "$1" "$2" -x LD_LIBRARY_PATH="$lib" -x FI_OFI_RXM_USE_CMA=$local \
			-x FI_OFI_RXM_USE_SHM=$local --mca pml cm \
			--mca mtl ofi --mca mtl_ofi_provider_include "tcp;ofi_rxm" --mca btl self ;;
	ob1tcp)
		set -- "$1" "$2" --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include lo ;;
	vader)
		set -- "$1" "$2" --mca pml ob1 --mca btl self,vader ;;
	ucxsm)
		set -- "$1" "$2" -x UCX_TLS=sm,self --mca pml ucx --mca pml_ucx_tls any \
			--mca pml_ucx_devices any --mca btl self ;;
	ucxtcp)
		set -- "$1" "$2" -x UCX_TLS=tcp,self -x UCX_NET_DEVICES=lo --mca pml ucx --mca pml_ucx_tls any \
			--mca pml_ucx_devices any --mca btl self ;;
	esac
	t=$1 rep=$2; shift 2
	timeout -k 10 300 mpirun --allow-run-as-root --oversubscribe -np 2 "$@" \
		"$work/mpi_bench" ${MPI_BENCH_ARGS:-} >"$work/$t.$rep" 2>"$work/$t.$rep.err" ||
		{ echo "mpi-bench: $t run $rep failed:" >&2; tail -5 "$work/$t.$rep.err" >&2; }
}

transports=${MPI_BENCH_TRANSPORTS:-"ours system ob1tcp ucxtcp"}
rep=1
while [ $rep -le "$reps" ]; do
	for t in $transports; do run "$t" "$rep"; done
	rep=$((rep + 1))
done

# Median over the repetitions, per transport and size.
printf '%-8s %8s %10s %10s\n' transport size lat_us rate_mps
for t in $transports; do
	cat "$work/$t".[0-9]* 2>/dev/null | awk -v t="$t" '
		$1 == "size" { lat[$2] = lat[$2] " " $4; rate[$2] = rate[$2] " " $6; n[$2]++ }
		function med(s,   a, k, i, j, x) {
			k = split(s, a, " ")
			for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
			return a[int((k + 1) / 2)]
		}
		END { for (s in n) printf "%-8s %8d %10s %10s\n", t, s, med(lat[s]), med(rate[s]) }' |
		sort -k2,2n
done
