#!/bin/sh
# Runs test/mpi/mpi_check.c under Debian's unmodified Open MPI, over the ofi MTL
# and our tcp;ofi_rxm provider, on 2 and 4 ranks. Skips (77) when Open MPI is
# not installed. Fails if Open MPI did not select the ofi MTL or loaded any
# libfabric other than the one in $top_builddir/.libs.
set -u

: "${top_builddir:=.}"
: "${top_srcdir:=.}"

if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
	echo "run-mpi: Open MPI (mpirun, mpicc) not installed; skipping"
	exit 77
fi

libdir=$(cd "$top_builddir/.libs" 2>/dev/null && pwd) || {
	echo "run-mpi: $top_builddir/.libs not found; build libfabric first" >&2
	exit 1
}
if [ ! -e "$libdir/libfabric.so.1" ]; then
	echo "run-mpi: $libdir/libfabric.so.1 missing" >&2
	exit 1
fi

work=$(mktemp -d /tmp/run-mpi.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! mpicc -O1 -Wall -Wextra -Werror -o "$work/mpi_check" "$top_srcdir/test/mpi/mpi_check.c"; then
	echo "run-mpi: mpicc failed" >&2
	exit 1
fi

# Open MPI refuses to run as root without both the flag and these variables.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Our library must win the soname lookup in every rank (mpirun forwards it with -x).
export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MPI_CHECK_LIBFABRIC_DIR="$libdir"
# Each rank logs its phases, so a failure shows where it stopped.
export MPI_CHECK_TRACE=1

status=0
# The last run asks for automatic data progress (fi_domain(3) FI_PROGRESS_AUTO), as
# `--mca mtl_ofi_data_progress auto` users do: Open MPI cannot start if the provider refuses.
for run in 2 4 2-auto; do
	np=${run%%-*}
	progress=manual
	[ "$run" = 2-auto ] && progress=auto
	log="$work/np$run.log"
	# pml cm + mtl ofi only: with no fallback transport, if the ofi MTL cannot
	# come up over tcp;ofi_rxm, MPI_Init fails instead of silently using the
	# tcp BTL. Only btl self is allowed (Open MPI wants one BTL for itself);
	# the tcp and vader BTLs, which could carry traffic, stay out.
	timeout -k 10 90 mpirun --allow-run-as-root --oversubscribe -np "$np" \
		-x LD_LIBRARY_PATH -x MPI_CHECK_LIBFABRIC_DIR -x MPI_CHECK_TRACE \
		--mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "tcp;ofi_rxm" \
		--mca btl self --mca mtl_base_verbose 100 --mca mtl_ofi_data_progress "$progress" \
		"$work/mpi_check" >"$log" 2>&1
	rc=$?
	selected=$(grep -c "select: component ofi selected" "$log")
	if [ $rc -ne 0 ]; then
		echo "run-mpi: FAIL: $np ranks: mpirun exited with $rc (124 = timeout)"
		status=1
	elif [ "$selected" -ne "$np" ]; then
		echo "run-mpi: FAIL: $np ranks: ofi MTL selected in $selected of $np ranks"
		status=1
	elif ! grep -q "^mpi_check: $np ranks, 0 failures$" "$log"; then
		echo "run-mpi: FAIL: $np ranks: no success line from mpi_check"
		status=1
	else
		echo "run-mpi: PASS: $np ranks over ofi MTL, tcp;ofi_rxm, $progress data progress, $libdir/libfabric.so.1"
		continue
	fi
	grep -v "mca: base:\|mca:base:select" "$log" | tail -n 40
done
exit $status
