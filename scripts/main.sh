#!/usr/bin/env bash
# The main job: build, list what the library offers with fi_info, and run a fi_pingpong
# server/client pair over "tcp;ofi_rxm" on loopback, both sides on our libfabric.so.1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}
port=${PINGPONG_PORT:-47592}

"$top/scripts/build.sh"
export LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# Our tools when built, Debian's unmodified ones (loading our library) otherwise.
fi_info=$build/util/fi_info;         [ -x "$fi_info" ] || fi_info=/usr/bin/fi_info
pingpong=$build/util/fi_pingpong;    [ -x "$pingpong" ] || pingpong=/usr/bin/fi_pingpong

echo "== fi_info -l ($fi_info)"
"$fi_info" -l
echo "== fi_info -p 'tcp;ofi_rxm' -e FI_EP_RDM"
"$fi_info" -p "tcp;ofi_rxm" -t FI_EP_RDM

echo "== fi_pingpong -p 'tcp;ofi_rxm' -e rdm on 127.0.0.1:$port ($pingpong)"
"$pingpong" -p "tcp;ofi_rxm" -e rdm -B "$port" -I 1000 -S all & server=$!
. "$top/test/wait_listen.sh"
wait_listen "$port" || true  # the client then fails and says why
status=0
timeout 300 "$pingpong" -p "tcp;ofi_rxm" -e rdm -P "$port" -I 1000 -S all 127.0.0.1 || status=$?
wait "$server" || status=$?
[ "$status" -eq 0 ] && echo "main job: pingpong passed" || echo "main job: pingpong FAILED ($status)"
exit "$status"
