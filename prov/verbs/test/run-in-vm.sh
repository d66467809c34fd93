#!/bin/sh
# Runs the verbs provider's checks on Soft-RoCE inside the project's test VM:
#   1. fi_info (Debian's, unmodified) lists rxe0 through our library,
#   2. the GoogleTest device tests (prov/verbs/test/verbs_unit),
#   3. Debian's unmodified fi_pingpong -p verbs -e msg -S all, server and client on 192.0.2.1.
#
#   prov/verbs/test/run-in-vm.sh [BUILD_DIR]      (or: make check-verbs)
#
# BUILD_DIR defaults to $top_builddir, then the current directory. Exit status 0 when all
# checks pass, 1 when one fails, 77 when the VM cannot run on this machine.
set -u

if [ "${1:-}" = "--inside-vm" ]; then
  build=$2
  export LD_LIBRARY_PATH="$build/.libs"
  failures=0
  step() { echo "== $*"; }
  verdict() { if [ "$1" -eq 0 ]; then echo "PASS: $2"; else echo "FAIL: $2 (status $1)"; failures=$((failures + 1)); fi; }

  step "fi_info -p verbs"
  out=$(fi_info -p verbs 2>&1); rc=$?
  echo "$out"
  if [ $rc -eq 0 ] && echo "$out" | grep -q "domain: rxe0"; then verdict 0 "fi_info lists rxe0"; else verdict 1 "fi_info lists rxe0"; fi

  step "GoogleTest device tests"
  timeout 600 "$build/prov/verbs/test/verbs_unit"; verdict $? "verbs_unit"

  step "fi_pingpong -p verbs -e msg -S all"
  if command -v fi_pingpong >/dev/null; then
    log=$(mktemp)
    timeout 600 fi_pingpong -p verbs -e msg -S all > "$log" 2>&1 &
    server=$!
    sleep 2
    timeout 600 fi_pingpong -p verbs -e msg -S all 192.0.2.1; client_rc=$?
    wait $server; server_rc=$?
    echo "-- server side:"; cat "$log"; rm -f "$log"
    verdict $client_rc "fi_pingpong client"
    verdict $server_rc "fi_pingpong server"
  else
    echo "fi_pingpong not installed (package libfabric-bin): skipped"
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
exec "$top_src/fabtests/scripts/rxe-vm" --timeout 1800 -- sh "$here/run-in-vm.sh" --inside-vm "$build"
