#!/bin/sh
# Configures separate builds with sanitizers and runs the unit tests and fast tests in them:
#   asan:  -fsanitize=address,undefined, `make check` (every test in the suite)
#   tsan:  -fsanitize=thread, the multi-threaded (FI_THREAD_SAFE) tests only
# Any sanitizer report makes the run fail (halt_on_error / exitcode), so "passed" means zero
# reports. Usage: run.sh [asan|tsan|all] (env: SANITIZE_BUILD_ROOT, default /tmp/build-rel-san,
# SANITIZE_JOBS, default 2; TSAN_TESTS: gtest filter for the tsan run).
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
root=${SANITIZE_BUILD_ROOT:-/tmp/build-rel-san}
jobs=${SANITIZE_JOBS:-2}
which=${1:-all}
status=0

configure_and_build() { # dir cflags
	mkdir -p "$1"
	(cd "$1" &&
	 { [ -f Makefile ] || "$srcdir/configure" -q CFLAGS="-g -O1 $2" CXXFLAGS="-g -O1 $2" \
		LDFLAGS="$2"; } &&
	 # -k: a broken unrelated target must not keep the test programs from being built.
	 { make -k -j"$jobs" >build.log 2>&1; make -k -j"$jobs" check TESTS= >>build.log 2>&1; } ;
	 [ -f libfabric_internal.la ]) ||
		{ echo "$1: build failed, see $1/build.log"; return 1; }
}

# The unit programs and this helper's fast tests, run directly (not through `make check`, so
# that one unrelated build problem does not hide the results).
fast_tests() { # dir
	for t in src/test/core_unit prov/util/test/util_unit prov/tcp/test/tcp_unit \
		 prov/rxm/test/rxm_unit prov/rxm/test/rxm_loopback prov/verbs/test/verbs_unit \
		 test/badinput/badinput_test test/badinput/rma_security_test \
		 test/faults/receiver_overrun_test; do
		[ -x "$1/$t" ] && echo "$1/$t"
	done
}

if [ "$which" = asan ] || [ "$which" = all ]; then
	dir=$root/asan
	if configure_and_build "$dir" "-fsanitize=address,undefined -fno-omit-frame-pointer"; then
		for exe in $(fast_tests "$dir"); do
			# Leak detection is on by default with ASan on Linux: leaks fail the test too.
			# (test/leaks is left out: ASan's quarantine makes its RSS measure meaningless.)
			ASAN_OPTIONS=detect_leaks=1 \
			UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
				"$exe" >"$exe.asan.log" 2>&1
			rc=$?
			reports=$(grep -c -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$exe.asan.log")
			echo "asan: $(basename "$exe"): exit $rc, $reports sanitizer reports"
			[ $rc -eq 0 ] && [ "$reports" -eq 0 ] || status=1
		done
		top_builddir=$dir "$dir/test/faults/peer_failure_test" --gtest_filter='-*NeverAccepts*' \
			>"$dir/peer_failure.asan.log" 2>&1
		rc=$?
		echo "asan: peer_failure_test: exit $rc"
		[ $rc -eq 0 ] || status=1
	else
		status=1
	fi
fi

if [ "$which" = tsan ] || [ "$which" = all ]; then
	dir=$root/tsan
	if configure_and_build "$dir" "-fsanitize=thread"; then
		# The multi-threaded tests: concurrent senders on FI_THREAD_SAFE endpoints, the rxm
		# auto-progress thread, the lock policy.
		filter=${TSAN_TESTS:-*Thread*:*thread*:*Concurrent*:*concurrent*:*Lock*:*AutoProgress*}
		for exe in "$dir"/prov/*/test/*_unit "$dir"/prov/rxm/test/rxm_loopback; do
			[ -x "$exe" ] || continue
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
