#!/bin/sh
# Configures separate builds with sanitizers and runs tests in them:
#   asan:  -fsanitize=address,undefined: the unit programs, the bad-input, RMA, overrun,
#          thread-safety and peer-failure tests, and the quick fabtests set over tcp and
#          tcp;ofi_rxm (fabtests/scripts/check-quick.sh)
#   tsan:  -fsanitize=thread: the multi-threaded (FI_THREAD_SAFE) tests
# Any sanitizer report makes the run fail: reports go to files (log_path) that are counted,
# so "passed" means zero reports, including from processes the tests start themselves.
# Usage: run.sh [asan|tsan|all] (env: SANITIZE_BUILD_ROOT, default /tmp/build-rel-san,
# SANITIZE_JOBS, default 2; TSAN_TESTS: gtest filter for the tsan run).
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
root=${SANITIZE_BUILD_ROOT:-/tmp/build-rel-san}
jobs=${SANITIZE_JOBS:-2}
which=${1:-all}
status=0

# The programs each run needs (paths in the build tree). verbs_unit only when verbs is built.
asan_programs="src/test/core_unit prov/util/test/util_unit prov/tcp/test/tcp_unit \
	prov/rxm/test/rxm_unit prov/rxm/test/rxm_loopback test/badinput/badinput_test \
	test/badinput/rma_security_test test/faults/receiver_overrun_test \
	test/faults/connection_cut_test test/threads/thread_safe_test"
tsan_programs="prov/util/test/util_unit prov/tcp/test/tcp_unit prov/rxm/test/rxm_loopback \
	test/threads/thread_safe_test"

has_verbs() { grep -q "define HAVE_VERBS 1" "$1/config.h" 2>/dev/null; }

# Configures DIR with the sanitizer flags (again only when they change) and builds the given
# make targets there: the first one (all, or the library) alone, then the programs, because
# `make -j all prog...` runs automake's recursive `all` beside the top-level goals and both
# link the same libraries at once (broken .lo/.so seen). A program that fails to build fails
# the run: it is never silently left out. Warnings are not errors here: instrumented -O1 code makes GCC 12 report false
# "maybe-uninitialized" warnings inside libstdc++ (std::regex, std::function).
configure_and_build() { # dir cflags targets...
	dir=$1 san=$2
	shift 2
	mkdir -p "$dir"
	(cd "$dir" &&
	 { { [ -f Makefile ] && [ "$(cat configured-with 2>/dev/null)" = "$san" ]; } ||
	   { "$srcdir/configure" -q --disable-werror CFLAGS="-g -O1 $san" \
		CXXFLAGS="-g -O1 $san" LDFLAGS="$san" && echo "$san" > configured-with; }; } &&
	 { ! has_verbs . || set -- "$@" $verbs_programs; } &&
	 first=$1 && shift &&
	 make -j"$jobs" "$first" >build.log 2>&1 && make -j"$jobs" "$@" >>build.log 2>&1) ||
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
	if configure_and_build "$dir" "-fsanitize=address,undefined -fno-omit-frame-pointer" \
		all $asan_programs test/faults/peer_failure_test; then
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
	else
		status=1
	fi
fi

if [ "$which" = tsan ] || [ "$which" = all ]; then
	dir=$root/tsan
	verbs_programs=
	if configure_and_build "$dir" "-fsanitize=thread" libfabric_internal.la $tsan_programs; then
		# The multi-threaded tests: concurrent senders on FI_THREAD_SAFE endpoints, the rxm
		# auto-progress thread, the lock policy.
		filter=${TSAN_TESTS:-*Thread*:*thread*:*Concurrent*:*concurrent*:*Lock*:*AutoProgress*}
		for exe in $tsan_programs; do
			exe=$dir/$exe
			TSAN_OPTIONS=halt_on_error=1:exitcode=66 "$exe" --gtest_filter="$filter" \
				>"$exe.tsan.log" 2>&1
			rc=$?
			echo "tsan: $(basename "$exe"): exit $rc ($(grep -c '^\[       OK \]' "$exe.tsan.log") tests ok)"
			[ $rc -eq 0 ] || { status=1; grep -m3 -E "WARNING: ThreadSanitizer|SUMMARY" "$exe.tsan.log"; }
		done
	else
		status=1
	fi
fi
exit $status
