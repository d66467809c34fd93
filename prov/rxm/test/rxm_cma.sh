#!/bin/sh
# Same-host rendezvous (FI_OFI_RXM_USE_CMA, rxm_cma.h) between two processes over
# "tcp;ofi_rxm", with fabtests' fi_msg_pingpong checking every byte received (-v):
#  1. default: both peers prove each other's pid and pull rendezvous data by process_vm_readv;
#  2. FI_OFI_RXM_USE_CMA=0 at one peer: it refuses the offers, data comes through the socket,
#     and the other peer stops offering;
#  3. one peer in its own pid namespace (unshare, when allowed): its pid means nothing to the
#     other, the token proof fails both ways, data comes through the socket.
# Ports 21111-21140. About 10 s.
[ -n "$top_builddir" ] || top_builddir=$(cd "$(dirname "$0")/../../.." && pwd)
PP="$top_builddir/fabtests/benchmarks/fi_msg_pingpong"
[ -x "$PP" ] || { echo "SKIP: $PP not built"; exit 77; }
LD_LIBRARY_PATH="$top_builddir/.libs"
export LD_LIBRARY_PATH
. "$(dirname "$0")/../../../test/wait_listen.sh"
export FI_LOG_LEVEL=info FI_LOG_PROV=ofi_rxm
PULLED="rendezvous data pulled by process_vm_readv"
REFUSED="not proved"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=21110
status=0

# run NAME SERVER_PREFIX CLIENT_PREFIX SIZE...: a pingpong pair per size; logs in $dir/NAME.*
run() {
	name=$1 srv_pre=$2 cli_pre=$3
	shift 3
	: >"$dir/$name.srv"
	: >"$dir/$name.cli"
	for size in "$@"; do
		port=$((port + 3))
		args="-p tcp;ofi_rxm -e rdm -S $size -I 3 -w 1 -v -E=$((port + 1)) -T 30"
		# shellcheck disable=SC2086
		env $srv_pre timeout 60 "$PP" $args -B $port >>"$dir/$name.srv" 2>&1 &
		server=$!
		wait_listen $((port + 1)) # the out-of-band port: -B listens only after the exchange
		# shellcheck disable=SC2086
		if ! env $cli_pre timeout 50 "$PP" $args -P $port 127.0.0.1 >>"$dir/$name.cli" 2>&1
		then
			echo "FAIL: $name: client, size $size"
			status=1
		fi
		if ! wait $server; then
			echo "FAIL: $name: server, size $size"
			status=1
		fi
	done
}

expect() { # expect NAME FILE PATTERN yes|no
	if grep -q "$3" "$2"; then found=yes; else found=no; fi
	if [ "$found" != "$4" ]; then
		echo "FAIL: $1: '$3' in $(basename "$2"): $found, expected $4"
		tail -20 "$2"
		status=1
	fi
}

SIZES="all 24579 32769 49155 98304 200003 262144"

run default "" "" $SIZES
expect default "$dir/default.srv" "$PULLED" yes
expect default "$dir/default.cli" "$PULLED" yes

run refused "FI_OFI_RXM_USE_CMA=0" "" $SIZES
expect refused "$dir/refused.srv" "$PULLED" no
expect refused "$dir/refused.cli" "$PULLED" no
expect refused "$dir/refused.srv" "$REFUSED" yes
expect refused "$dir/refused.srv" "same-host rendezvous off" yes

if unshare --pid --fork true 2>/dev/null; then
	run pidns "" "unshare --pid --fork" all 262144
	expect pidns "$dir/pidns.srv" "$PULLED" no
	expect pidns "$dir/pidns.cli" "$PULLED" no
	expect pidns "$dir/pidns.srv" "$REFUSED" yes
	expect pidns "$dir/pidns.cli" "$REFUSED" yes
else
	echo "pid namespace part skipped: unshare --pid not allowed here"
fi
[ $status -eq 0 ] && echo "PASS: same-host rendezvous used, refused and unproved as expected"
exit $status
