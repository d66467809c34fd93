#!/bin/sh
# Configures separate builds with sanitizers and runs tests in them:
#   asan:  -fsanitize=address,undefined: the unit programs (shm's too), the bad-input, RMA,
#          overrun, thread-safety and peer-failure tests, rxm's switch of same-host peers to
#          shm (rxm_shm_switch), and the quick fabtests set over tcp, tcp;ofi_rxm (with and
#          without the switch), shm and shm;ofi_rxm (fabtests/scripts/check-quick.sh)
#   tsan:  -fsanitize=thread: the multi-threaded (FI_THREAD_SAFE) tests, and every shm test:
#          shm_unit, rxm_shm_switch and peer_failure_test's *OverShm cases (issue 20: the
#          doorbells, sleeping waiters and the auto-progress thread meet there)
# Any sanitizer report makes the run fail: reports go to files (log_path) that are counted,
# so "passed" means zero reports, including from processes the tests start themselves.
# Usage: run.sh [asan|tsan|all] [--build-only] (env: SANITIZE_BUILD_ROOT, default
# /tmp/build-rel-san, SANITIZE_JOBS, default 2; TSAN_TESTS: gtest filter for the tsan run).
# --build-only configures and builds the tree(s) and runs nothing: test/run-slow.sh --prepare
# uses it to build in the background while make check and the VM tests run.
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
root=${SANITIZE_BUILD_ROOT:-/tmp/build-rel-san}
jobs=${SANITIZE_JOBS:-2}
which=${1:-all}
build_only=0
[ "${2:-}" = --build-only ] && build_only=1
status=0

# The programs each run needs (paths in the build tree). verbs_unit only when verbs is built.
asan_programs="src/test/core_unit prov/util/test/util_unit prov/tcp/test/tcp_unit \
	prov/rxm/test/rxm_unit prov/rxm/test/rxm_loopback test/badinput/badinput_test \
	test/badinput/rma_security_test test/faults/receiver_overrun_test \
	test/faults/connection_cut_test test/threads/thread_safe_test prov/shm/test/shm_unit \
	prov/rxm/test/rxm_shm_switch"
# TSan: "program:gtest filter" (the threaded cases; all of the shm programs; *OverShm).
# ShmWait.IdleReceiverSleeps measures a sleeping thread's CPU (< 5 ms over 500 ms): under
# TSan one wake-up alone costs 5-6 ms now and then, and the test has no second thread, so
# it runs in make check and under ASan only (memcheck leaves it out for the same reason).
threaded='*Thread*:*thread*:*Concurrent*:*concurrent*:*Lock*:*AutoProgress*'
tsan_runs="prov/util/test/util_unit:$threaded prov/tcp/test/tcp_unit:$threaded \
	prov/rxm/test/rxm_loopback:$threaded test/threads/thread_safe_test:$threaded \
	prov/shm/test/shm_unit:*-ShmWait.IdleReceiverSleeps prov/rxm/test/rxm_shm_switch:* \
	test/faults/peer_failure_test:*OverShm*"
set -f  # the filters' stars are not file patterns
tsan_programs=$(for run in $tsan_runs; do echo "${run%%:*}"; done)

has_verbs() { grep -q "define HAVE_VERBS 1" "$1/config.h" 2>/dev/null; }

# Configures DIR with the sanitizer flags and configure arguments (again only when they
# change) and builds the given make targets there: the first one (all, or the library) alone,
# then the programs, because `make -j all prog...` runs automake's recursive `all` beside the
# top-level goals and both link the same libraries at once (broken .lo/.so seen). A program
# that fails to build fails the run: it is never silently left out. Warnings are not errors
# here: instrumented -O1 code makes GCC 12 report false "maybe-uninitialized" warnings inside
# libstdc++ (std::regex, std::function).
# The library and the first target are compiled at -O1; the test programs' own sources at -O0
# (CXXFLAGS given to the second make): the sanitizers check -O0 code as fully (-O1 is only
# ASan's advice for speed, which matters in the library the tests drive, not in test code),
# and GoogleTest sources compile in about half the time, most of the tree's build time.
# One build per tree at a time (a lock beside the tree): run-slow.sh --prepare may still be
# building it in the background when the run that needs it starts; that run waits, then
# finds the tree up to date.
configure_and_build() { # dir sanitizer-flags configure-args targets...
	dir=$1 san=$2 conf=$3
	shift 3
	mkdir -p "$dir"
	(flock 9 && cd "$dir" &&
	 { { [ -f Makefile ] && [ "$(cat configured-with 2>/dev/null)" = "$san $conf" ]; } ||
	   { "$srcdir/configure" -q --disable-werror $conf CFLAGS="-g -O1 $san" \
		CXXFLAGS="-g -O1 $san" LDFLAGS="$san" && echo "$san $conf" > configured-with; }; } &&
	 { ! has_verbs . || set -- "$@" $verbs_programs; } &&
	 first=$1 && shift &&
	 make -j"$jobs" "$first" >build.log 2>&1 &&
	 make -j"$jobs" CXXFLAGS="-g -O0 $san" "$@" >>build.log 2>&1) 9>"$dir.lock" ||
		{ echo "$dir: build failed, see $dir/build.log"; tail -n 20 "$dir/build.log"; return 1; }
}

# Runs "$@" with ASan/UBSan writing their reports to files under $reports/NAME, prints one
# line with the exit code and the number of reports, and fails the run on either.
# (The report files also catch processes the test starts itself, e.g. fabtests servers.)
run_checked() { # name log command...
	name=$1 log=$2
	shift 2
	mkdir -p "$reports/$name"
	# Leak detection is on by default with ASan on Linux: leaks fail the test too.
	# UBSan reports go to stderr (combined with ASan, a UBSan log_path lost them): they are
	# counted in the log, and halt_on_error makes them fatal, so a process a test starts
	# fails that test too.
	ASAN_OPTIONS=detect_leaks=1:log_path=$reports/$name/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$@" >"$log" 2>&1
	rc=$?
	n=$(( $(find "$reports/$name" -type f | wc -l) + $(grep -c "runtime error:" "$log") ))
	echo "asan: $name: exit $rc, $n sanitizer reports"
	if [ "$n" -ne 0 ]; then
		{ find "$reports/$name" -type f | head -n3 | xargs -r grep -h -m3 -E \
			"ERROR: |runtime error:|SUMMARY"; grep -m3 "runtime error:" "$log"; }
	fi
	[ $rc -eq 0 ] || grep -m5 -E "^\[  FAILED  \]|Failure$" "$log"
	[ $rc -eq 0 ] && [ "$n" -eq 0 ] || status=1
}

if [ "$which" = asan ] || [ "$which" = all ]; then
	dir=$root/asan
	# "all" builds the library and the fabtests programs.
	verbs_programs=prov/verbs/test/verbs_unit
	if ! configure_and_build "$dir" "-fsanitize=address,undefined -fno-omit-frame-pointer" "" \
		all $asan_programs test/faults/peer_failure_test; then
		status=1
	elif [ $build_only = 0 ]; then
		reports=$dir/san-reports
		rm -rf "$reports"
		# (test/leaks is left out: ASan's quarantine makes its RSS measure meaningless.)
		programs=$asan_programs
		has_verbs "$dir" && programs="$programs prov/verbs/test/verbs_unit"
		for exe in $programs; do
			run_checked "$(basename "$exe")" "$dir/$exe.asan.log" "$dir/$exe"
		done
		top_builddir=$dir  # where the fault and fabtests scripts find their programs
		export top_builddir
		run_checked peer_failure_test "$dir/peer_failure.asan.log" \
			"$dir/test/faults/peer_failure_test" --gtest_filter='-*NeverAccepts*'
		# The quick fabtests over tcp and tcp;ofi_rxm; servers, clients and library instrumented.
		run_checked fabtests_quick "$dir/fabtests.asan.log" \
			"$srcdir/fabtests/scripts/check-quick.sh"
		grep -E "^[0-9]+ passed" "$dir/fabtests.asan.log"
	fi
fi

if [ "$which" = tsan ] || [ "$which" = all ]; then
	dir=$root/tsan
	verbs_programs=
	# No TSan test uses verbs (the VM runs them): the tree leaves it out.
	if ! configure_and_build "$dir" "-fsanitize=thread" --enable-verbs=no \
		libfabric_internal.la $tsan_programs; then
		status=1
	elif [ $build_only = 0 ]; then
		# The multi-threaded tests: concurrent senders on FI_THREAD_SAFE endpoints, the rxm
		# auto-progress thread, the lock policy; and the shm tests.
		for run in $tsan_runs; do
			exe=$dir/${run%%:*}
			filter=${TSAN_TESTS:-${run#*:}}
			TSAN_OPTIONS=halt_on_error=1:exitcode=66 "$exe" --gtest_filter="$filter" \
				>"$exe.tsan.log" 2>&1
			rc=$?
			echo "tsan: $(basename "$exe"): exit $rc ($(grep -c '^\[       OK \]' "$exe.tsan.log") tests ok)"
			[ $rc -eq 0 ] || { status=1; grep -m3 -E "WARNING: ThreadSanitizer|SUMMARY" "$exe.tsan.log"; }
		done
	fi
fi
exit $status
