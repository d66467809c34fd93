#!/bin/sh
# Runs Debian's unmodified fi_pingpong over "tcp;ofi_rxm" against our libfabric.so: every
# size (-S all) with data checks (-c), untagged and tagged. Skips when fi_pingpong is missing.
PINGPONG=/usr/bin/fi_pingpong
[ -x "$PINGPONG" ] || { echo "SKIP: $PINGPONG not installed"; exit 77; }
[ -n "$top_builddir" ] || top_builddir=$(cd "$(dirname "$0")/../../.." && pwd)
LD_LIBRARY_PATH="$top_builddir/.libs"
export LD_LIBRARY_PATH
. "$(dirname "$0")/../../../test/wait_listen.sh"

port=21100
status=0
for mode in msg tagged; do
	port=$((port + 1))
	log=$(mktemp)
	timeout 120 "$PINGPONG" -p "tcp;ofi_rxm" -e rdm -m $mode -S all -I 2 -c -B $port >"$log" 2>&1 &
	server=$!
	wait_listen $port
	if ! timeout 110 "$PINGPONG" -p "tcp;ofi_rxm" -e rdm -m $mode -S all -I 2 -c -P $port \
		127.0.0.1; then
		echo "FAIL: client, mode $mode"
		status=1
	fi
	if ! wait $server; then
		echo "FAIL: server, mode $mode"
		cat "$log"
		status=1
	fi
	rm -f "$log"
done
exit $status
