#!/bin/sh
# Same-host peers in two network namespaces (joined by a veth pair) stay on tcp even with
# FI_OFI_RXM_USE_SHM=1 on both sides: the far end of the tcp connection is not a socket of
# the peer's namespace (sock_diag finds nothing), and shm's abstract socket names are per
# namespace. Then, as a control, the same pair in one namespace moves. fabtests'
# fi_msg_pingpong checks every byte (-v). Needs root (skipped otherwise). About 5 s.
[ -n "$top_builddir" ] || top_builddir=$(cd "$(dirname "$0")/../../.." && pwd)
PP="$top_builddir/fabtests/benchmarks/fi_msg_pingpong"
[ -x "$PP" ] || { echo "SKIP: $PP not built"; exit 77; }
[ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null || { echo "SKIP: needs root and unshare -n"; exit 77; }
LD_LIBRARY_PATH="$top_builddir/.libs"
export LD_LIBRARY_PATH FI_LOG_LEVEL=info FI_LOG_PROV=ofi_rxm FI_OFI_RXM_USE_SHM=1
MOVED="shm connecting -> connected"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Runs inside a fresh network namespace (the server's); the client's is a child namespace
# held open by a sleeping process, joined with nsenter.
cat >"$dir/inner.sh" <<'INNER'
set -u
ip link set lo up
unshare -n sleep 60 &
holder=$!
sleep 0.2
ip link add v0 type veth peer name v1 || exit 77
ip link set v1 netns "$holder"
ip addr add 10.231.0.1/24 dev v0
ip link set v0 up
nsenter -t "$holder" -n sh -c 'ip link set lo up; ip addr add 10.231.0.2/24 dev v1; ip link set v1 up'
args="-p tcp;ofi_rxm -e rdm -S all -I 3 -w 1 -v -T 30"
status=0
# Two namespaces: the client is in the holder's.
timeout 60 "$PP" $args -s 10.231.0.1 -B 21171 -E=21172 >"$dir/two.srv" 2>&1 &
server=$!
sleep 1
nsenter -t "$holder" -n timeout 50 "$PP" $args -P 21171 -E=21172 10.231.0.1 >"$dir/two.cli" 2>&1 || status=1
wait $server || status=1
# One namespace, same addresses: the control.
timeout 60 "$PP" $args -s 10.231.0.1 -B 21173 -E=21174 >"$dir/one.srv" 2>&1 &
server=$!
sleep 1
timeout 50 "$PP" $args -P 21173 -E=21174 10.231.0.1 >"$dir/one.cli" 2>&1 || status=1
wait $server || status=1
kill "$holder" 2>/dev/null
exit $status
INNER
PP="$PP" dir="$dir" unshare -n sh "$dir/inner.sh"
rc=$?
[ $rc -eq 77 ] && { echo "SKIP: no veth here"; exit 77; }
status=0
[ $rc -eq 0 ] || { echo "FAIL: a pingpong failed"; status=1; }
for f in two.srv two.cli; do
	if grep -q "$MOVED" "$dir/$f"; then
		echo "FAIL: $f: moved to shm across network namespaces"
		status=1
	fi
done
if ! grep -q "$MOVED" "$dir/one.cli"; then
	echo "FAIL: one.cli: did not move to shm within one namespace"
	status=1
fi
[ $status -ne 0 ] && tail -5 "$dir"/*.srv "$dir"/*.cli
[ $status -eq 0 ] && echo "PASS: two namespaces stay on tcp, one namespace moves to shm"
exit $status
