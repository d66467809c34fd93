#!/bin/sh
# The slow reliability jobs, bounded, meant for CI (scripts/test.sh runs this with
# --slow; `make check-slow` runs it too):
#   1. ASan+UBSan build: unit, bad-input, RMA, fault and thread tests, quick fabtests over tcp
#      and tcp;ofi_rxm, zero sanitizer reports (test/sanitizers/run.sh asan)
#   2. TSan build: the FI_THREAD_SAFE multi-threaded tests (run.sh tsan)
#   3. libFuzzer: every target for FUZZ_SECONDS (default 45) from its committed corpus
# Each job prints its own lines and its duration; the exit status is non-zero if any failed.
# Usage: run-slow.sh BUILD_DIR  (scratch builds go to BUILD_DIR/sanitizers and BUILD_DIR/fuzz-out)
# env: SLOW_JOBS="asan tsan fuzz" to pick jobs, FUZZ_SECONDS.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:?usage: run-slow.sh BUILD_DIR}" && pwd)
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

for j in ${SLOW_JOBS:-asan tsan fuzz}; do
	case $j in
	asan|tsan) job "$j" env SANITIZE_BUILD_ROOT="$build/sanitizers" sh "$here/sanitizers/run.sh" "$j" ;;
	fuzz) job fuzz env FUZZ_SECONDS="${FUZZ_SECONDS:-45}" top_builddir="$build" \
		sh "$here/fuzz/run.sh" "$build/fuzz-out" ;;
	*) echo "unknown slow job '$j'"; status=1 ;;
	esac
done
echo "slow jobs: $( [ $status -eq 0 ] && echo passed || echo FAILED ) in $(( $(date +%s) - start_all )) s"
exit $status
