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
	 make -j"$jobs" >build.log 2>&1 && make -j"$jobs" check TESTS= >>build.log 2>&1) ||
		{ echo "$1: build failed, see $1/build.log"; return 1; }
}

if [ "$which" = asan ] || [ "$which" = all ]; then
	dir=$root/asan
	if configure_and_build "$dir" "-fsanitize=address,undefined -fno-omit-frame-pointer"; then
		# detect_leaks is on by default with ASan on Linux: leaks fail the test too.
		ASAN_OPTIONS=abort_on_error=0:detect_leaks=1 \
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
			make -C "$dir" -j"$jobs" check >"$dir/check.log" 2>&1
		rc=$?
		grep -E "^(# |PASS|FAIL|XFAIL|XPASS|ERROR)" "$dir/check.log" | sed 's/^/asan: /'
		grep -l -E "ERROR: (Address|Leak)Sanitizer|runtime error:" $(find "$dir" -name '*.log') \
			2>/dev/null | sed 's/^/asan report in: /'
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
