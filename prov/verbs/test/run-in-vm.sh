#!/bin/sh
# Runs the verbs provider's checks on Soft-RoCE inside the project's test VM:
#   1. fi_info (Debian's, unmodified) lists rxe0 through our library, version 117.0,
#   2. the GoogleTest device tests (prov/verbs/test/verbs_unit),
#   3. Debian's unmodified fi_pingpong -p verbs -e msg -c -S all, server and client on 192.0.2.1,
#   4. the same fi_pingpong over "verbs;ofi_rxm" -e rdm, in msg and tagged mode,
#   5. (opt-in) two "hosts": rxe1 and rxe2 on the two ends of a veth pair exchanging "verbs;ofi_rxm"
#      (eager, SAR and rendezvous sizes) and verbs traffic across the wire,
#   6. rxm_flood: credit flow control under a flood with the receiver idle, RNR retries off,
#   7. fabtests/scripts/check-quick-vm.sh (the fabtests quick sets on verbs and
#      verbs;ofi_rxm), when that script exists.
#
#   prov/verbs/test/run-in-vm.sh [BUILD_DIR]      (or: make check-verbs)
#
# BUILD_DIR defaults to $top_builddir, then the current directory. Exit status 0 when all
# checks pass, 1 when one fails, 77 when the VM cannot run on this machine.
# VERBS_VM_CHECKS (a space-separated subset of: info unit pingpong rxm flood twohost fabtests)
# runs only some of the checks. twohost (5) is not in the default set yet: its rxm and verbs
# connections are still refused across the veth pair (under investigation, see README.md).
# Time in the VM (TCG): about 1 min for 1-2, 1.5 min for 3, 3 min for 4, 1 min for 6, and the
# quick sets' own budget (11 min) for 7.
set -u

if [ "${1:-}" = "--inside-vm" ]; then
  build=$2
  src=$3
  export LD_LIBRARY_PATH="$build/.libs"
  checks=${VERBS_VM_CHECKS:-"info unit pingpong rxm flood fabtests"}
  failures=0
  step() { echo "== $*"; }
  verdict() { if [ "$1" -eq 0 ]; then echo "PASS: $2"; else echo "FAIL: $2 (status $1)"; failures=$((failures + 1)); fi; }
  wanted() { case " $checks " in *" $1 "*) return 0 ;; esac; return 1; }

  # pingpong_pair LABEL SERVER_PREFIX CLIENT_PREFIX SERVER_ADDR ARGS...: a Debian fi_pingpong
  # server (run under SERVER_PREFIX, e.g. "ip netns exec h1") and its client.
  pingpong_pair() {
    label=$1 server_prefix=$2 client_prefix=$3 addr=$4
    shift 4
    log=$(mktemp)
    $server_prefix timeout 300 fi_pingpong "$@" > "$log" 2>&1 &
    server=$!
    # The server may take a while to start under emulation: wait for its control port.
    for _ in $(seq 60); do
      ss -ltn 2>/dev/null | grep -q ':47592 ' && break
      sleep 1
    done
    $client_prefix timeout 300 fi_pingpong "$@" "$addr"; client_rc=$?
    wait $server; server_rc=$?
    echo "-- server side:"; cat "$log"; rm -f "$log"
    verdict $client_rc "$label client"
    verdict $server_rc "$label server"
  }

  if wanted info; then
    step "fi_info -p verbs"
    out=$(fi_info -p verbs 2>&1); rc=$?
    echo "$out"
    if [ $rc -eq 0 ] && echo "$out" | grep -q "domain: rxe0"; then verdict 0 "fi_info lists rxe0"; else verdict 1 "fi_info lists rxe0"; fi
    if echo "$out" | grep -q "version: 117.0"; then verdict 0 "verbs reports version 117.0"; else verdict 1 "verbs reports version 117.0"; fi
    out=$(fi_info -p "verbs;ofi_rxm" 2>&1); rc=$?
    if [ $rc -eq 0 ] && echo "$out" | grep -q "provider: verbs;ofi_rxm"; then verdict 0 "fi_info lists verbs;ofi_rxm"; else echo "$out"; verdict 1 "fi_info lists verbs;ofi_rxm"; fi
  fi

  if wanted unit; then
    step "GoogleTest device tests"
    timeout 600 "$build/prov/verbs/test/verbs_unit"; verdict $? "verbs_unit"
  fi

  if ! command -v fi_pingpong >/dev/null; then
    echo "fi_pingpong not installed (package libfabric-bin): pingpong checks skipped"
    checks=$(echo " $checks " | sed 's/ pingpong / /; s/ rxm / /; s/ twohost / /')
  fi

  if wanted pingpong; then
    step "fi_pingpong -p verbs -e msg -c -S all"
    pingpong_pair "fi_pingpong verbs msg" "" "" 192.0.2.1 -p verbs -e msg -c -S all
  fi

  if wanted rxm; then
    for mode in msg tagged; do
      step "fi_pingpong -p verbs;ofi_rxm -e rdm -c -S all -m $mode"
      pingpong_pair "fi_pingpong verbs;ofi_rxm rdm $mode" "" "" 192.0.2.1 \
        -p "verbs;ofi_rxm" -e rdm -c -S all -m $mode
    done
  fi

  if wanted flood; then
    step "credit flow control: rxm_flood over verbs;ofi_rxm with FI_VERBS_RNR_RETRY=0"
    FI_VERBS_RNR_RETRY=0 timeout 300 "$build/prov/verbs/test/rxm_flood" 192.0.2.1
    verdict $? "rxm_flood (no send without a peer receive)"
  fi

  if wanted twohost; then
    # Two "hosts": rxe1 on veth1 (198.51.100.1) and rxe2 on veth2 (198.51.100.2), the two
    # ends of one veth pair, so every packet crosses the wire between two rxe devices.
    # Why not two network namespaces: the guest kernel (Debian 12, Linux 6.1) routes and
    # listens for rxe's RoCE UDP traffic only in the initial namespace, so an rxe device on a
    # netdev in another namespace cannot reach anything ("No route to host"). Here both ends
    # stay in the initial namespace and policy routing keeps the kernel from short-cutting
    # traffic between its own addresses through lo: locally sent packets to .1 leave by
    # veth2, to .2 by veth1, and the receiving end accepts a local source address. The
    # iif veth rules are for rdma_cm, which accepts a connection request only if the route
    # back to the requester, looked up as if coming in on the receiving netdev, leaves by it.
    step "two hosts: rxe1 on veth1 (198.51.100.1) <-> rxe2 on veth2 (198.51.100.2)"
    ip link add veth1 type veth peer name veth2 &&
      ip addr add 198.51.100.1/32 dev veth1 && ip addr add 198.51.100.2/32 dev veth2 &&
      ip link set veth1 up && ip link set veth2 up &&
      sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0 \
        net.ipv4.conf.veth1.rp_filter=0 net.ipv4.conf.veth2.rp_filter=0 \
        net.ipv4.conf.veth1.accept_local=1 net.ipv4.conf.veth2.accept_local=1 &&
      ip route add 198.51.100.1/32 dev veth2 src 198.51.100.2 table 101 &&
      ip route add 198.51.100.2/32 dev veth1 src 198.51.100.1 table 102 &&
      ip rule add pref 100 iif lo to 198.51.100.1 lookup 101 &&
      ip rule add pref 101 iif lo to 198.51.100.2 lookup 102 &&
      ip rule add pref 102 iif veth2 to 198.51.100.1 lookup 101 &&
      ip rule add pref 103 iif veth1 to 198.51.100.2 lookup 102 &&
      ip rule add pref 1000 lookup local && ip rule del pref 0 lookup local &&
      rdma link add rxe1 type rxe netdev veth1 && rdma link add rxe2 type rxe netdev veth2
    rc=$?
    verdict $rc "two-host setup"
    if [ $rc -eq 0 ]; then
      rdma link show
      out=$(FI_VERBS_DEVICE_NAME=rxe2 fi_info -p verbs 2>&1)
      if echo "$out" | grep -q "domain: rxe2"; then verdict 0 "rxe2 listed"; else echo "$out"; verdict 1 "rxe2 listed"; fi
      wire_bytes() { sed -n 's/^ *veth1: *\([0-9]*\).*/\1/p' /proc/net/dev; }
      before=$(wire_bytes)
      h1="env FI_VERBS_DEVICE_NAME=rxe1" h2="env FI_VERBS_DEVICE_NAME=rxe2"
      # 4 KiB eager, 64 KiB segmented (SAR), 1 MiB rendezvous (RMA read by the receiver).
      for size in 4096 65536 1048576; do
        for mode in msg tagged; do
          step "two hosts: fi_pingpong verbs;ofi_rxm -m $mode -S $size, server on rxe1, client on rxe2"
          pingpong_pair "two hosts verbs;ofi_rxm $mode $size" "$h1" "$h2" \
            198.51.100.1 -p "verbs;ofi_rxm" -e rdm -c -I 20 -S $size -m $mode
        done
      done
      step "two hosts: fi_pingpong verbs -e msg -S 65536"
      pingpong_pair "two hosts verbs msg 65536" "$h1" "$h2" \
        198.51.100.1 -p verbs -e msg -c -I 20 -S 65536
      after=$(wire_bytes)
      crossed=$(( ${after:-0} - ${before:-0} ))
      echo "bytes received by veth1 during the two-host runs: $crossed"
      # 20 round trips of 1 MiB alone are 20 MiB each way.
      if [ "$crossed" -gt 20000000 ]; then verdict 0 "traffic crossed the veth wire"; else verdict 1 "traffic crossed the veth wire"; fi
    fi
  fi

  if wanted fabtests; then
    quick="$src/fabtests/scripts/check-quick-vm.sh"
    if [ -x "$quick" ]; then
      step "fabtests quick sets on verbs and verbs;ofi_rxm ($quick)"
      timeout 1200 "$quick" "$build"; rc=$?
      # 77: the script found nothing it could run, which inside the VM is a failure too.
      verdict $rc "fabtests quick sets (check-quick-vm.sh)"
    else
      echo "fabtests/scripts/check-quick-vm.sh not present: fabtests quick sets not run"
    fi
  fi

  echo "== $failures failure(s)"
  [ $failures -eq 0 ]
  exit $?
fi

here=$(cd "$(dirname "$0")" && pwd)
top_src=$(cd "$here/../../.." && pwd)
build=${1:-${top_builddir:-$PWD}}
build=$(cd "$build" && pwd) || exit 1
if [ ! -x "$build/prov/verbs/test/verbs_unit" ] || [ ! -e "$build/.libs/libfabric.so.1" ]; then
  echo "run-in-vm: build libfabric.so and prov/verbs/test/verbs_unit in $build first (make check-verbs does)" >&2
  exit 1
fi
exec "$top_src/fabtests/scripts/rxe-vm" --timeout 3000 -- \
  env VERBS_VM_CHECKS="${VERBS_VM_CHECKS:-info unit pingpong rxm flood fabtests}" \
  sh "$here/run-in-vm.sh" --inside-vm "$build" "$top_src"
