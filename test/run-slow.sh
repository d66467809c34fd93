#!/bin/sh
# The slow reliability jobs, bounded, run by CI (.ci/run -> scripts/test.sh --slow; also
# `make check-slow`):
#   asan      ASan+UBSan build: unit, bad-input, RMA, fault and thread tests, quick fabtests over
#             tcp and tcp;ofi_rxm, zero sanitizer reports (test/sanitizers/run.sh asan)
#   tsan      TSan build: the FI_THREAD_SAFE multi-threaded tests (run.sh tsan)
#   fuzz      libFuzzer: every target from its committed corpus for its time (10-60 s, see
#             test/fuzz/run.sh; FUZZ_SECONDS sets one for all), two targets at a time
#   memcheck  valgrind memcheck on the unit programs and the bad-input/RMA tests of BUILD_DIR
#             (test/sanitizers/memcheck.sh): no invalid access, no definite/indirect leak
#   soak      test/faults/soak of BUILD_DIR for SOAK_SECONDS (default 120): counts equal
# memcheck and soak use the programs `make check` built in BUILD_DIR (built here if missing).
# Each job prints its own lines and its duration; the exit status is non-zero if any failed.
# The soak and the asan/tsan tests use fixed loopback ports (20000-25999), like make check.
# Usage: run-slow.sh [--prepare] BUILD_DIR  (scratch builds go to BUILD_DIR/sanitizers and
# BUILD_DIR/fuzz-out)
# --prepare only builds what the jobs need (the ASan and TSan trees, the fuzz targets) and
# runs no test: scripts/test.sh starts it at the lowest priority in the background once the
# main build is done, so those builds take the CPU that make check's tests and the VM tests
# leave idle. The jobs of the later run wait for a build still going (a lock per tree) and
# then find it up to date.
# env: SLOW_JOBS="asan tsan fuzz memcheck soak" to pick jobs, FUZZ_SECONDS, SOAK_SECONDS.
set -u
here=$(cd "$(dirname "$0")" && pwd)
prepare=0
[ "${1:-}" = --prepare ] && { prepare=1; shift; }
build=$(cd "${1:?usage: run-slow.sh [--prepare] BUILD_DIR}" && pwd)
status=0
start_all=$(date +%s)

job() { # name command...
	name=$1
	shift
	t0=$(date +%s)
	echo "== slow job $name"
	if "$@"; then result=passed; else result=FAILED; status=1; fi
	echo "== slow job $name: $result in $(( $(date +%s) - t0 )) s"
}

if [ $prepare = 1 ]; then
	for j in ${SLOW_JOBS:-asan tsan fuzz memcheck soak}; do
		case $j in
		asan|tsan) job "build $j" env SANITIZE_BUILD_ROOT="$build/sanitizers" \
			sh "$here/sanitizers/run.sh" "$j" --build-only ;;
		fuzz) job "build fuzz" env FUZZ_BUILD_ONLY=1 top_builddir="$build" \
			sh "$here/fuzz/run.sh" "$build/fuzz-out" ;;
		esac
	done
	exit $status
fi

for j in ${SLOW_JOBS:-asan tsan fuzz memcheck soak}; do
	case $j in
	asan|tsan) job "$j" env SANITIZE_BUILD_ROOT="$build/sanitizers" sh "$here/sanitizers/run.sh" "$j" ;;
	fuzz) job fuzz env top_builddir="$build" sh "$here/fuzz/run.sh" "$build/fuzz-out" ;;
	memcheck) job memcheck make -s -C "$build" -j2 memcheck ;;
	soak) job soak env SOAK_SECONDS="${SOAK_SECONDS:-120}" make -s -C "$build" soak ;;
	*) echo "unknown slow job '$j'"; status=1 ;;
	esac
done
echo "slow jobs: $( [ $status -eq 0 ] && echo passed || echo FAILED ) in $(( $(date +%s) - start_all )) s"
exit $status
