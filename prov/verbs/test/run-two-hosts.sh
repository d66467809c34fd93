#!/bin/sh
# Two-host verbs test: two Soft-RoCE VMs, each its own kernel with its own rxe0, joined by a
# virtual Ethernet wire (fabtests/scripts/rxe-vm --link), run Debian's unmodified fi_pingpong:
# the server in VM 1 (198.51.100.1), the client in VM 2 (198.51.100.2), over
#   "verbs;ofi_rxm" -e rdm, msg and tagged, at 64 B (eager), 64 KiB (SAR), 1 MiB (rendezvous),
#   and msg at 16 KiB (the largest eager message),
#   verbs -e msg at 64 B (inline) and 64 KiB,
# and checks that the client's NIC received the bytes. Each fi_pingpong pair is reported
# PASS/FAIL like the single-VM checks of run-in-vm.sh, which calls this script.
#
#   prov/verbs/test/run-two-hosts.sh BUILD_DIR
#
# Why two VMs and not two network namespaces in one VM: the guest kernel (Debian 12, Linux
# 6.1) has rxe send and receive RoCE (UDP 4791) only in the initial namespace, so an rxe on a
# netdev in another namespace reaches nothing, and two rxe devices in one namespace make the
# kernel deliver between its own addresses through lo, where rdma_cm refuses the connection.
#
# The VMs share the host's filesystem; they synchronise through files in a private directory
# (ready.N: server N listens; client.N / server.N: exit statuses). The wire is a unix socket
# in that directory, so parallel runs never share a port. Exit status: 0 all passed, 1 a
# check failed, 77 the VMs cannot run here. Cost under TCG with two 1-CPU VMs: ~4 minutes.
set -u

# One line per fi_pingpong pair: LABEL|ARGUMENTS (the server address is appended for the client).
tests() {
  cat <<'EOF'
verbs;ofi_rxm msg 64|-p verbs;ofi_rxm -e rdm -m msg -S 64 -I 100
verbs;ofi_rxm tagged 64|-p verbs;ofi_rxm -e rdm -m tagged -S 64 -I 100
verbs;ofi_rxm msg 16384|-p verbs;ofi_rxm -e rdm -m msg -S 16384 -I 20
verbs;ofi_rxm msg 65536|-p verbs;ofi_rxm -e rdm -m msg -S 65536 -I 20
verbs;ofi_rxm tagged 65536|-p verbs;ofi_rxm -e rdm -m tagged -S 65536 -I 20
verbs;ofi_rxm msg 1048576|-p verbs;ofi_rxm -e rdm -m msg -S 1048576 -I 20
verbs;ofi_rxm tagged 1048576|-p verbs;ofi_rxm -e rdm -m tagged -S 1048576 -I 20
verbs msg 64|-p verbs -e msg -S 64 -I 100
verbs msg 65536|-p verbs -e msg -S 65536 -I 20
EOF
}
server_addr=198.51.100.1
client_addr=198.51.100.2
ctrl_port=47592          # fi_pingpong's out-of-band control port

# Runs fi_pingpong with the arguments of one tests() line (split on spaces; the provider
# name contains ';' but no space) plus "$@".
pingpong() {
  args=$1
  shift
  # shellcheck disable=SC2086 # word splitting of the argument list is intended
  timeout 180 fi_pingpong -c $args "$@" < /dev/null
}

# wait_for_file FILE SECONDS: fails after SECONDS, or at once when the host has given up ($sync/abort).
wait_for_file() {
  n=0
  while [ ! -e "$1" ]; do
    n=$((n + 1))
    if [ $n -gt $(($2 * 2)) ] || [ -e "$sync/abort" ]; then return 1; fi
    sleep 0.5
  done
}

if [ "${1:-}" = --inside-vm ]; then
  role=$2 build=$3 sync=$4
  export LD_LIBRARY_PATH="$build/.libs"
  failures=0
  verdict() { if [ "$1" -eq 0 ]; then echo "PASS: $2"; else echo "FAIL: $2 (status $1)"; failures=$((failures + 1)); fi; }
  if ! command -v fi_pingpong >/dev/null; then
    echo "FAIL: fi_pingpong not installed (package libfabric-bin)"
    exit 1
  fi
  rdma link show
  i=0
  tests > "$sync/tests.$role"
  while IFS='|' read -r label args; do
    i=$((i + 1))
    if [ -e "$sync/abort" ]; then
      verdict 1 "two hosts: $label ($role): not run, the other VM has ended"
      continue
    fi
    if [ "$role" = server ]; then
      log=$(mktemp)
      pingpong "$args" > "$log" 2>&1 &
      pid=$!
      # Start-up under emulation takes seconds: tell the client only once the server listens.
      n=0
      until ss -ltn 2>/dev/null | grep -q ":$ctrl_port "; do
        n=$((n + 1))
        if [ $n -gt 120 ] || ! kill -0 $pid 2>/dev/null; then break; fi
        sleep 0.5
      done
      touch "$sync/ready.$i"
      # A client that failed leaves this server waiting for nobody: stop it soon after.
      n=0
      while kill -0 $pid 2>/dev/null; do
        if [ -e "$sync/client.$i" ] || [ -e "$sync/abort" ]; then
          n=$((n + 1))
          [ $n -gt 30 ] && kill $pid
        fi
        sleep 0.5
      done
      wait $pid; rc=$?
      echo "-- server: $label"; cat "$log"; rm -f "$log"
      echo $rc > "$sync/server.$i"
      verdict $rc "two hosts: $label (server in VM 1)"
    else
      if wait_for_file "$sync/ready.$i" 180; then
        echo "-- client: $label"
        pingpong "$args" "$server_addr"; rc=$?
      else
        echo "the server of '$label' never became ready"
        rc=124
      fi
      echo $rc > "$sync/client.$i"
      verdict $rc "two hosts: $label (client in VM 2)"
      # The next server starts only after this one ended; don't race it to the control port.
      wait_for_file "$sync/server.$i" 60 || true
    fi
  done < "$sync/tests.$role"
  if [ "$role" = client ]; then
    rx=$(sed -n 's/^ *eth0: *\([0-9]*\).*/\1/p' /proc/net/dev)
    echo "bytes received by the client VM's NIC: $rx"
    # 20 round trips of 1 MiB in two modes alone bring 40 MiB.
    if [ "${rx:-0}" -gt 40000000 ]; then verdict 0 "two hosts: traffic crossed the wire"; else verdict 1 "two hosts: traffic crossed the wire"; fi
  fi
  echo "== $role: $failures failure(s)"
  [ $failures -eq 0 ]
  exit $?
fi

here=$(cd "$(dirname "$0")" && pwd)
top_src=$(cd "$here/../../.." && pwd)
build=${1:-${top_builddir:-$PWD}}
build=$(cd "$build" && pwd) || exit 1
rxe_vm=$top_src/fabtests/scripts/rxe-vm
sync=$(mktemp -d /tmp/ofi-verbs-two-hosts.XXXXXX) || exit 1
trap 'rm -rf "$sync"' EXIT
start=$(date +%s)

"$rxe_vm" --smp 1 --timeout 900 --link "server:$sync/link" --addr "$server_addr/24" -- \
  sh "$here/run-two-hosts.sh" --inside-vm server "$build" "$sync" > "$sync/server.out" 2>&1 &
server_vm=$!
# qemu creates the socket as it starts (after a first-use image build, which can take minutes).
n=0
until [ -S "$sync/link" ]; do
  if ! kill -0 $server_vm 2>/dev/null; then
    wait $server_vm; rc=$?
    cat "$sync/server.out"
    exit $rc
  fi
  n=$((n + 1))
  [ $n -gt 1200 ] && { echo "run-two-hosts: the server VM never opened its link"; kill $server_vm; exit 1; }
  sleep 0.5
done
"$rxe_vm" --smp 1 --timeout 900 --link "client:$sync/link" --addr "$client_addr/24" -- \
  sh "$here/run-two-hosts.sh" --inside-vm client "$build" "$sync" > "$sync/client.out" 2>&1 &
client_vm=$!
# When one VM ends, the other has nobody left to talk to: tell it ($sync/abort) instead of
# letting it wait for its timeouts.
while kill -0 $server_vm 2>/dev/null && kill -0 $client_vm 2>/dev/null; do sleep 1; done
touch "$sync/abort"
wait $server_vm; server_rc=$?
wait $client_vm; client_rc=$?
echo "==== VM 1 (server, $server_addr)"; cat "$sync/server.out"
echo "==== VM 2 (client, $client_addr)"; cat "$sync/client.out"
echo "two-host run: $(( $(date +%s) - start )) s"
[ $server_rc -eq 77 ] && [ $client_rc -eq 77 ] && exit 77
[ $server_rc -eq 0 ] && [ $client_rc -eq 0 ]
