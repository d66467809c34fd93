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

# With --slow, the slow jobs' builds (ASan and TSan trees, fuzz targets) start now in the
# background at the lowest priority: make check's tests and the VM tests wait on sockets,
# timers and the emulator much of the time, and that idle CPU builds them; when those want
# the CPU, nice 19 leaves it to them. The slow jobs at the end wait for what is not built
# yet (test/run-slow.sh --prepare). Its output: $build/slow-prepare.log.
prepare_pid=
want_slow() { [ "$slow" = 1 ] && [ "${SKIP_SLOW:-0}" != 1 ]; }
if want_slow && "$top/scripts/install-deps.sh" clang libclang-rt-14-dev valgrind; then
	nice -n 19 "$top/test/run-slow.sh" --prepare "$build" >"$build/slow-prepare.log" 2>&1 &
	prepare_pid=$!
fi

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
# builds (started above) and their tests, bounded fuzzing, valgrind memcheck, the soak; see
# test/run-slow.sh. They need clang (libFuzzer) and valgrind besides the build's packages
# (installed above: no prepare job means that failed). SKIP_SLOW=1 skips.
if want_slow; then
	if [ -n "$prepare_pid" ] && "$top/test/run-slow.sh" "$build"; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1)); status=1
	fi
	[ -z "$prepare_pid" ] || wait "$prepare_pid"
fi

echo "tests: ${pass:-0} passed, ${fail:-0} failed, ${skip:-0} skipped"
exit "$status"
