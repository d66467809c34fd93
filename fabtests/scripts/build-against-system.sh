#!/bin/bash
# The "honesty check": build every fabtest and fi_pingpong against the system's libfabric
# (Debian's libfabric 1.17, -lfabric) into a scratch directory, and optionally run the
# quick set there. A test that fails against the system library either found an upstream
# bug (exclude it with the reason) or tests a quirk of our implementation (fix the test).
#
# usage: build-against-system.sh [-o OUTDIR] [-r] [runfabtests options...] [PROVIDER...]
#   -o OUTDIR  where to put the binaries (default /tmp/fabtests-system)
#   -r         also run runfabtests.sh -t quick for each PROVIDER (default: tcp "tcp;ofi_rxm")
set -eu
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
top=$(cd "$src/.." && pwd)
out=/tmp/fabtests-system
run=no
while getopts o:r opt; do
	case $opt in
	o) out=$OPTARG ;;
	r) run=yes ;;
	*) echo "usage: $0 [-o OUTDIR] [-r] [PROVIDER...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
CC=${CC:-gcc}
CFLAGS="-std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -Werror"

# The system headers (/usr/include/rdma) and library: nothing of ours is involved.
mkdir -p "$out/unit" "$out/functional" "$out/benchmarks" "$out/obj"
for c in "$src"/common/*.c; do
	$CC $CFLAGS -c -o "$out/obj/$(basename "$c" .c).o" "$c"
done
for dir in unit functional benchmarks; do
	for c in "$src/$dir"/*.c; do
		[ -e "$c" ] || continue
		name=$(basename "$c" .c)
		$CC $CFLAGS -o "$out/$dir/$name" "$c" "$out"/obj/*.o -lfabric
	done
done
$CC $CFLAGS -o "$out/fi_pingpong" "$top"/util/fi_pingpong*.c -lfabric
echo "built into $out"

if [ $run = yes ]; then
	[ $# -gt 0 ] || set -- tcp "tcp;ofi_rxm"
	status=0
	for prov in "$@"; do
		echo "== system libfabric, provider $prov"
		"$here/runfabtests.sh" -b "$out" -L "" -t quick \
			-X "$here/excludes/system/${prov//;/_}.exclude" "$prov" || status=1
	done
	exit $status
fi
