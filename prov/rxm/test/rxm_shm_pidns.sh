#!/bin/sh
# Same-host peers of tcp;ofi_rxm in two pid namespaces stay on tcp even with
# FI_OFI_RXM_USE_SHM=1 on both sides (rxm_shm_netns.sh does the same for network namespaces).
# Both are in one network namespace, so each can reach the other's shm listener; what fails is
# the proof. The acceptor of the tcp connection (the server) offers its listener as
# fi_shm://PID:N with the pid it has in its own namespace; the connector (the client) checks,
# with kernel facts (sock_diag, /proc/PID/fd), that this pid holds the far end of its tcp
# connection, and once the shm socket is up, the same of the pid SO_PEERCRED gives for it.
#  1. client in a new pid namespace (sharing the host's /proc): the name's pid checks out in
#     /proc, but the kernel gives 0 for the listener's pid, which is outside the client's
#     namespace: "does not hold the far end", the client never moves;
#  2. server in a new pid namespace: its offer names its own pid there (2), which on the
#     client's side is someone else's: the client refuses the name ("not proved");
#  3. control: both in one namespace move to shm.
# Moving is read from the connector's log ("shm connecting -> connected": it moves as soon as
# its shm endpoint is up; the acceptor's "accepting -> connected" alone does not move it).
# fabtests' fi_msg_pingpong checks every byte (-v). Needs unshare --pid (skipped otherwise).
# Ports 21181-21190. About 10 s.
. "$(dirname "$0")/pingpong_pair.sh"
unshare --pid --fork true 2>/dev/null || { echo "SKIP: unshare --pid not allowed here"; exit 77; }
export FI_LOG_LEVEL=info FI_LOG_PROV=ofi_rxm FI_OFI_RXM_USE_SHM=1
MOVED="shm connecting -> connected"
NAME_REFUSED="shm offer naming pid [0-9]* not proved"
LISTENER_REFUSED="shm listener does not hold the far end of the core connection"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0

# run NAME PORT SERVER_PREFIX CLIENT_PREFIX: one pingpong pair; logs in $dir/NAME.{srv,cli}
run() { pp_pair "$1" "$2" "$3" "$4" all; }

run client_ns 21181 "" "unshare --pid --fork"
expect client_ns "$dir/client_ns.cli" "$MOVED" no
expect client_ns "$dir/client_ns.cli" "$LISTENER_REFUSED" yes

run server_ns 21184 "unshare --pid --fork" ""
expect server_ns "$dir/server_ns.cli" "$MOVED" no
expect server_ns "$dir/server_ns.cli" "$NAME_REFUSED" yes

run control 21187 "" ""
expect control "$dir/control.cli" "$MOVED" yes

[ $status -eq 0 ] && echo "PASS: pid namespaces stay on tcp, one namespace moves to shm"
exit $status
