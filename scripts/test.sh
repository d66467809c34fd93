#!/usr/bin/env bash
# The test command: build, run every test of `make check` (unit tests, ABI test, tests with
# Debian's unmodified fi_info/fi_pingpong, fabtests quick set), then the verbs tests inside
# a Soft-RoCE VM when the harness can run here, and with --slow the sanitizer, fuzzing,
# memcheck and soak jobs (test/run-slow.sh). Prints one summary line and fails on any failure.
set -uo pipefail
slow=0
[ "${1:-}" = --slow ] && slow=1
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}

"$top/scripts/build.sh" || { echo "build failed"; exit 1; }
cd "$build"

status=0
make -j"$(nproc)" check || status=1
for log in $(find . -name test-suite.log); do
	[ "$status" -eq 0 ] || cat "$log"
done

count() { sed -n "s/^# $1: *\([0-9]*\)/\1/p" test-suite.log | head -n1; }
pass=$(count PASS); fail=$(( $(count FAIL) + $(count ERROR) + $(count XPASS) )); skip=$(count SKIP)

# Verbs tests need a VM with Soft-RoCE; the harness says itself when it cannot run.
if [ -x "$top/prov/verbs/test/run-in-vm.sh" ] && [ "${SKIP_VERBS_VM:-0}" != 1 ]; then
	if "$top/prov/verbs/test/run-in-vm.sh" "$build"; then
		pass=$((pass + 1))
	else
		rc=$?
		if [ "$rc" -eq 77 ]; then skip=$((skip + 1)); echo "verbs VM tests skipped"; else fail=$((fail + 1)); status=1; fi
	fi
fi

# The slow reliability jobs with --slow (CI passes it, see .ci/run): ASan+UBSan and TSan
# builds and their tests, bounded fuzzing, valgrind memcheck, the soak; see test/run-slow.sh.
# They need clang (libFuzzer) and valgrind besides the build's packages. SKIP_SLOW=1 skips.
if [ "$slow" = 1 ] && [ "${SKIP_SLOW:-0}" != 1 ]; then
	if "$top/scripts/install-deps.sh" clang libclang-rt-14-dev valgrind &&
	   "$top/test/run-slow.sh" "$build"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); status=1
	fi
fi

echo "tests: ${pass:-0} passed, ${fail:-0} failed, ${skip:-0} skipped"
exit "$status"
