#!/bin/sh
# End-to-end check with an unmodified third-party client: Debian's fi_pingpong (built against
# libfabric 1.17) runs as server and client over our tcp provider on loopback, with data
# checking, for every transfer size. Skips when fi_pingpong is not installed.
PINGPONG=/usr/bin/fi_pingpong
[ -x "$PINGPONG" ] || { echo "SKIP: $PINGPONG not installed"; exit 77; }
LIBDIR="${top_builddir:-.}/.libs"
[ -e "$LIBDIR/libfabric.so.1" ] || { echo "FAIL: no $LIBDIR/libfabric.so.1"; exit 99; }

# A port of the tcp provider's test range (20000-20999), varied so parallel runs differ.
port=$((20100 + $$ % 800))
workdir=$(mktemp -d) || exit 99
trap 'rm -rf "$workdir"' EXIT
. "$(dirname "$0")/../../../test/wait_listen.sh"

run_pair() {
	LD_LIBRARY_PATH="$LIBDIR" timeout 120 "$PINGPONG" -p tcp -e msg "$@" -B "$port" \
		>"$workdir/server.log" 2>&1 &
	server=$!
	wait_listen "$port"
	LD_LIBRARY_PATH="$LIBDIR" timeout 120 "$PINGPONG" -p tcp -e msg "$@" -P "$port" \
		127.0.0.1 >"$workdir/client.log" 2>&1
	client_rc=$?
	wait $server
	server_rc=$?
	echo "fi_pingpong $*: client exit $client_rc, server exit $server_rc"
	if [ $client_rc -ne 0 ] || [ $server_rc -ne 0 ]; then
		echo "--- client"; cat "$workdir/client.log"
		echo "--- server"; cat "$workdir/server.log"
		return 1
	fi
	cat "$workdir/client.log"
	return 0
}

run_pair -S all -I 10 -c || exit 1
port=$((port + 1))
run_pair -S all -I 10 || exit 1
exit 0
