#!/bin/bash
# Runs Debian's unmodified fi_info (built against libfabric 1.17) on our libfabric.so.1 and
# requires that it loads, and that our util/fi_info prints exactly the same thing (stdout,
# stderr and exit status) for the same options. Then both tools run on the system's
# libfabric 1.17 too, where real providers exercise every output path of our tool.
# Skips when the system tool is missing.

sys_tool=${SYSTEM_FI_INFO:-/usr/bin/fi_info}
[ -x "$sys_tool" ] || { echo "SKIP: $sys_tool not installed"; exit 77; }
: "${top_builddir:?top_builddir must point at the build tree}"
unset FI_PROVIDER FI_LOG_LEVEL FI_LOG_PROV FI_LOG_SUBSYS

libdir=$top_builddir/.libs
# The real program, not libtool's wrapper script, so that both get the same argv[0].
our_tool=$top_builddir/util/.libs/fi_info
[ -x "$our_tool" ] || our_tool=$top_builddir/util/fi_info
[ -f "$libdir/libfabric.so.1" ] || { echo "FAIL: $libdir/libfabric.so.1 not built"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# run_tool NAME BINARY ARGS... : output in $work/NAME.{out,err,rc}. Both tools run under the
# name "fi_info" because usage and getopt messages contain it.
run_tool() {
	local name=$1 binary=$2
	shift 2
	LD_LIBRARY_PATH=$libdir timeout 60 bash -c 'exec -a fi_info "$@"' fi_info "$binary" "$@" \
		>"$work/$name.out" 2>"$work/$name.err"
	echo $? >"$work/$name.rc"
}

compare() {
	run_tool sys "$sys_tool" "$@"
	run_tool ours "$our_tool" "$@"
	if grep -q "version .FABRIC_" "$work/sys.err"; then
		fail "fi_info $*: system tool could not bind to our symbol versions"
		cat "$work/sys.err"
		return
	fi
	local part
	for part in out err rc; do
		if ! cmp -s "$work/sys.$part" "$work/ours.$part"; then
			fail "fi_info $*: $part differs (system tool vs ours)"
			diff -a "$work/sys.$part" "$work/ours.$part" | head -20
		fi
	done
}

# The system tool must really be running on our library, not on the system's.
if ! LD_LIBRARY_PATH=$libdir LD_DEBUG=libs "$sys_tool" --version 2>&1 >/dev/null |
	grep -q "calling init: $libdir/libfabric.so.1"; then
	fail "$sys_tool did not load $libdir/libfabric.so.1"
fi

# Our providers are the only ones a listing may show (the system library has others).
run_tool sys "$sys_tool" -l
if grep -q ':$' "$work/sys.out"; then
	if grep ':$' "$work/sys.out" | grep -v -x -E '(tcp|verbs|shm|ofi_rxm):'; then
		fail "fi_info -l lists providers that are not ours"
	fi
else
	echo "note: no providers available yet: $(cat "$work/sys.err")"
fi

compare_all() {
compare
compare -l
compare -v
compare -l -v
compare -e
compare -g TCP
compare -g log_level
compare -p tcp
compare -p tcp -v
compare -p 'tcp;ofi_rxm'
compare -p verbs
compare -t FI_EP_MSG
compare -t fi_ep_rdm -v
compare -c 'FI_MSG|FI_RMA'
compare -c FI_TAGGED -t FI_EP_RDM
compare -m FI_CONTEXT
compare -a FI_SOCKADDR_IN
compare -d lo
compare -f 127.0.0.1/32
compare -s 127.0.0.1
compare -n 127.0.0.1 -P 4791
compare -i FI_EP_MSG
compare -i nosuchtext
compare -p nosuchprovider
compare -e -p nosuchprovider
compare --list
compare --provider=tcp --verbose
compare --version
compare --ver
compare -h
compare -Z
compare -c FI_BOGUS
compare -c 'FI_MSG | FI_RMA'
compare -t FI_EP_BOGUS
compare -a BOGUS
compare -m FI_BUFFERED_RECV
compare -i
}

# Which names -c/-m/-t/-a accept (any case) and which they reject; -p nosuchprovider keeps
# each run short once the names are parsed.
compare_names() {
	local caps='fi_msg|FI_RMA|FI_TAGGED|FI_ATOMIC|FI_MULTICAST|FI_COLLECTIVE|FI_READ|FI_WRITE'
	caps+='|FI_RECV|FI_SEND|FI_REMOTE_READ|FI_REMOTE_WRITE|FI_MULTI_RECV|FI_REMOTE_CQ_DATA'
	caps+='|FI_MORE|FI_PEEK|FI_TRIGGER|FI_FENCE|FI_SOURCE_ERR|FI_LOCAL_COMM|FI_REMOTE_COMM'
	caps+='|FI_SHARED_AV|FI_RMA_EVENT|FI_SOURCE|FI_NAMED_RX_CTX|FI_DIRECTED_RECV|Fi_Hmem'
	compare -p nosuchprovider -c "$caps"
	compare -p nosuchprovider -m 'FI_CONTEXT|FI_MSG_PREFIX|FI_ASYNC_IOV|FI_RX_CQ_DATA|fi_local_mr|FI_NOTIFY_FLAGS_ONLY|FI_RESTRICTED_COMP|FI_CONTEXT2'
	local name
	for name in FI_EP_UNSPEC FI_EP_MSG FI_EP_DGRAM fi_ep_rdm FI_EP_SOCK_STREAM FI_EP_SOCK_DGRAM; do
		compare -p nosuchprovider -t "$name"
	done
	for name in FI_FORMAT_UNSPEC FI_SOCKADDR FI_SOCKADDR_IN fi_sockaddr_in6 FI_SOCKADDR_IB \
		FI_ADDR_PSMX FI_ADDR_GNI FI_ADDR_BGQ FI_ADDR_MLX FI_ADDR_STR FI_ADDR_PSMX2 \
		FI_ADDR_EFA FI_ADDR_IB_UD FI_ADDR_PSMX3 FI_ADDR_OPX FI_ADDR_CXI; do
		compare -p nosuchprovider -a "$name"
	done
	for name in FI_VARIABLE_MSG FI_RMA_PMEM FI_INJECT FI_AV_USER_ID FI_ATOMICS ''; do
		compare -p nosuchprovider -c "$name"
	done
	compare -p nosuchprovider -m FI_PEER_TRANSFER
}

echo "== on our library ($libdir)"
compare_all
compare_names

system_libdir=${SYSTEM_LIBFABRIC_DIR:-/usr/lib/x86_64-linux-gnu}
if [ -f "$system_libdir/libfabric.so.1" ]; then
	# Each run loads every system provider (~0.5 s): one case per output path.
	echo "== on the system library ($system_libdir)"
	libdir=$system_libdir
	# Its shm provider names addresses after the process id, whose length varies.
	export FI_PROVIDER='^shm'
	compare
	compare -l
	compare -e
	compare -i rxm
	compare -s 127.0.0.1 -a FI_SOCKADDR_IN -c 'FI_MSG|FI_RMA'
fi

if [ "$failures" -ne 0 ]; then
	echo "$failures comparison(s) failed"
	exit 1
fi
echo "PASS: system fi_info and ours agree on our library"
exit 0
