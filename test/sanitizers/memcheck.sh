#!/bin/sh
# Runs the GoogleTest unit programs of the build tree under valgrind memcheck: any invalid
# access or definite/indirect leak fails. Usage: memcheck.sh (env: top_builddir, MEMCHECK_FILTER
# a gtest filter, default all tests but those that count the process's own system calls:
# valgrind makes reads and writes of its own, which they would count; and the one that bounds
# the CPU of a sleeping reader: under valgrind waking up alone costs 4-30 ms of CPU).
set -u
build=${top_builddir:-.}
command -v valgrind >/dev/null 2>&1 || { echo "valgrind not installed" >&2; exit 1; }
status=0
for exe in "$build"/src/test/core_unit "$build"/prov/*/test/*_unit \
	   "$build"/test/badinput/badinput_test "$build"/test/badinput/rma_security_test; do
	[ -x "$exe" ] || continue
	# libtool wrappers: valgrind must see the real binary.
	real=$(dirname "$exe")/.libs/$(basename "$exe")
	[ -x "$real" ] || real=$exe
	log=$exe.memcheck.log
	valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
		--errors-for-leak-kinds=definite,indirect --track-fds=no -q \
		"$real" --gtest_filter="${MEMCHECK_FILTER:-*-ShmWait.BusyPollingPingPongMakesNoSystemCalls:ShmWait.BusyPollingAfterTrywaitMakesNoSystemCalls:ShmWait.IdleReceiverSleeps}" >"$log" 2>&1
	rc=$?
	echo "memcheck: $(basename "$exe"): exit $rc, $(grep -c '^==[0-9]*== [A-Z]' "$log") report lines"
	[ $rc -eq 0 ] || status=1
done
exit $status
