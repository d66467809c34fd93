#!/bin/bash
# Checks util/fi_info and util/fi_strerror on their own (no system tools needed) against
# the behaviour of the libfabric 1.17 tools: messages, exit codes and output layout.

: "${top_builddir:?top_builddir must point at the build tree}"
unset FI_PROVIDER FI_LOG_LEVEL FI_LOG_PROV FI_LOG_SUBSYS
export LD_LIBRARY_PATH=$top_builddir/.libs
fi_info_bin=$top_builddir/util/.libs/fi_info
[ -x "$fi_info_bin" ] || fi_info_bin=$top_builddir/util/fi_info
fi_strerror_bin=$top_builddir/util/.libs/fi_strerror
[ -x "$fi_strerror_bin" ] || fi_strerror_bin=$top_builddir/util/fi_strerror

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# run NAME BINARY ARGS...: stdout, stderr and exit status in $out, $err, $rc.
run() {
	local name=$1 binary=$2
	shift 2
	timeout 60 bash -c 'exec -a "$0" "$@"' "$name" "$binary" "$@" >"$work/out" 2>"$work/err"
	rc=$?
	out=$(cat "$work/out")
	err=$(cat "$work/err")
}

expect_rc() {
	[ "$rc" = "$1" ] || fail "$2: exit status $rc, expected $1 (stderr: $err)"
}

expect_text() {
	[ "$1" = "$2" ] || fail "$3: got [$1], expected [$2]"
}

run fi_info "$fi_info_bin" --version
expect_rc 0 "fi_info --version"
expect_text "$out" $'fi_info: 1.17.0\nlibfabric: 1.17.0\nlibfabric api: 1.17' "fi_info --version"

run fi_info "$fi_info_bin" -h
expect_rc 1 "fi_info -h"
expect_text "$(head -1 <<<"$out")" "Usage: fi_info" "fi_info -h first line"
expect_text "$(wc -l <<<"$out")" 18 "fi_info -h line count"

run fi_info "$fi_info_bin" -Z
expect_rc 1 "fi_info -Z"
expect_text "$err" "fi_info: invalid option -- 'Z'" "fi_info -Z message"

run fi_info "$fi_info_bin" -c 'FI_MSG|FI_BOGUS'
expect_rc 22 "fi_info -c FI_MSG|FI_BOGUS"
expect_text "$err" "error: Unrecognized capability: FI_BOGUS" "unknown capability"
run fi_info "$fi_info_bin" -m FI_BUFFERED_RECV
expect_rc 22 "fi_info -m FI_BUFFERED_RECV"
expect_text "$err" "error: Unrecognized mode: FI_BUFFERED_RECV" "unknown mode"
run fi_info "$fi_info_bin" -t FI_EP_BOGUS
expect_rc 22 "fi_info -t FI_EP_BOGUS"
expect_text "$err" "error: Unrecognized endpoint type: FI_EP_BOGUS" "unknown endpoint type"
run fi_info "$fi_info_bin" -a FI_ADDR_CXI
expect_rc 22 "fi_info -a FI_ADDR_CXI"
expect_text "$err" "error: Unrecognized address format: FI_ADDR_CXI" "unknown address format"

run fi_info "$fi_info_bin" -p nosuchprovider
expect_rc 61 "fi_info -p nosuchprovider"
expect_text "$err" "fi_getinfo: -61" "no matching provider"
expect_text "$out" "" "no matching provider prints nothing"

run fi_info "$fi_info_bin" -p tcp -t FI_EP_MSG
if [ "$rc" = 0 ]; then
	# Blocks of six lines: provider, then five indented fields in a fixed order.
	keys=$(sed -E 's/^( *[a-z]+):.*/\1/' <<<"$out" | head -6 | tr '\n' ',')
	expect_text "$keys" "provider,    fabric,    domain,    version,    type,    protocol," \
		"summary layout"
	grep -qx "    type: FI_EP_MSG" <<<"$out" || fail "summary lacks 'type: FI_EP_MSG'"
	grep -qx "    protocol: FI_PROTO_SOCK_TCP" <<<"$out" ||
		fail "summary lacks 'protocol: FI_PROTO_SOCK_TCP'"

	run fi_info "$fi_info_bin" -p tcp -t FI_EP_MSG -v
	expect_rc 0 "fi_info -p tcp -v"
	expect_text "$(head -2 <<<"$out")" $'---\nfi_info:' "verbose header"
	grep -qx "        prov_name: tcp" <<<"$out" || fail "verbose output lacks prov_name: tcp"
	blocks=$(grep -c '^---$' <<<"$out")
	summaries=$("$fi_info_bin" -p tcp -t FI_EP_MSG | grep -c '^provider:')
	expect_text "$blocks" "$summaries" "one verbose block per interface"

	run fi_info "$fi_info_bin" -l
	expect_rc 0 "fi_info -l"
	grep -qx "tcp:" <<<"$out" || fail "fi_info -l does not list tcp"

	run fi_info "$fi_info_bin" -g fi_log_level
	expect_rc 0 "fi_info -g fi_log_level"
	expect_text "$(head -1 <<<"$out")" "# FI_LOG_LEVEL: String" "fi_info -g (any case)"

	FI_LOG_LEVEL="warn x" run fi_info "$fi_info_bin" -g FI_LOG_LEVEL
	grep -qx 'FI_LOG_LEVEL="warn x"' <<<"$out" || fail "value with a space is not quoted"
else
	echo "note: tcp provider not usable here ($err); listing checks skipped"
fi

run fi_strerror "$fi_strerror_bin" 22
expect_rc 0 "fi_strerror 22"
expect_text "$out" "Invalid argument" "fi_strerror 22"
run fi_strerror "$fi_strerror_bin" -265
expect_text "$out" "Truncation error" "fi_strerror -265"
run fi_strerror "$fi_strerror_bin" 0x100
expect_text "$out" "Unspecified error" "fi_strerror 0x100"
run fi_strerror "$fi_strerror_bin" 12abc
expect_rc 1 "fi_strerror 12abc"
expect_text "$(head -1 <<<"$out")" "ERROR: unable to parse '12abc'" "fi_strerror 12abc"
run fi_strerror "$fi_strerror_bin" 2147483648
expect_rc 1 "fi_strerror 2147483648"
expect_text "$(head -1 <<<"$out")" "ERROR: '2147483648' is out of range" "fi_strerror range"
run fi_strerror "$fi_strerror_bin" -h
expect_rc 0 "fi_strerror -h"
expect_text "$(head -1 <<<"$out")" "Usage: fi_strerror FI_ERROR_CODE" "fi_strerror -h"
run fi_strerror "$fi_strerror_bin"
expect_rc 1 "fi_strerror without argument"

if [ "$failures" -ne 0 ]; then
	echo "$failures check(s) failed"
	exit 1
fi
echo "PASS: fi_info and fi_strerror behave like the libfabric 1.17 tools"
