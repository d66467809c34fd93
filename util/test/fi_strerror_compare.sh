#!/bin/bash
# Debian's fi_strerror tool, run on our library, and our util/fi_strerror must print the same
# text and exit status for every argument below. Skips when the system tool is missing.

sys_tool=${SYSTEM_FI_STRERROR:-/usr/bin/fi_strerror}
[ -x "$sys_tool" ] || { echo "SKIP: $sys_tool not installed"; exit 77; }
: "${top_builddir:?top_builddir must point at the build tree}"

libdir=$top_builddir/.libs
our_tool=$top_builddir/util/.libs/fi_strerror
[ -x "$our_tool" ] || our_tool=$top_builddir/util/fi_strerror

failures=0
check() {
	local sys ours sys_rc ours_rc
	# Both run as "fi_strerror": the usage text names the program.
	sys=$(LD_LIBRARY_PATH=$libdir bash -c 'exec -a fi_strerror "$@"' x "$sys_tool" "$@" 2>&1)
	sys_rc=$?
	ours=$(LD_LIBRARY_PATH=$libdir bash -c 'exec -a fi_strerror "$@"' x "$our_tool" "$@" 2>&1)
	ours_rc=$?
	if [ "$sys" != "$ours" ] || [ "$sys_rc" != "$ours_rc" ]; then
		echo "FAIL: fi_strerror $*"
		echo "  system ($sys_rc): $sys"
		echo "  ours   ($ours_rc): $ours"
		failures=$((failures + 1))
	fi
}

for code in $(seq 0 140) $(seq 250 275) 1000 2147483647; do
	check "$code"
	check "-$code"
done
for arg in 0x10 010 +5 " 5" "5 " "" abc 12abc FI_EINVAL 2147483648 -2147483648 \
	-2147483649 0x80000000 99999999999 -h --help; do
	check "$arg"
done
check
check 1 2

if [ "$failures" -ne 0 ]; then
	echo "$failures comparison(s) failed"
	exit 1
fi
echo "PASS: system fi_strerror and ours agree on our library"
