#!/bin/sh
# Same-host rendezvous (FI_OFI_RXM_USE_CMA, rxm_cma.h) between two processes over
# "tcp;ofi_rxm", with fabtests' fi_msg_pingpong checking every byte received (-v):
#  1. default: both peers prove each other's pid and pull rendezvous data by process_vm_readv;
#  2. FI_OFI_RXM_USE_CMA=0 at one peer: it refuses the offers, data comes through the socket,
#     and the other peer stops offering;
#  3. one peer in its own pid namespace (unshare, when allowed): its pid means nothing to the
#     other, the token proof fails both ways, data comes through the socket;
#  4. over "shm;ofi_rxm": the peer's pid is the one SO_PEERCRED gives for the shm socket, so
#     peers pull there too, and a peer in its own pid namespace (whose pid the kernel gives
#     us differently) is refused; there messages larger than the 16 KiB eager size are
#     pulled (FI_OFI_RXM_CMA_RNDV_MIN's default over shared memory).
# Once a peer pulled, the other offers without keys (no registration per rendezvous).
# Ports 21111-21140. About 10 s.
. "$(dirname "$0")/pingpong_pair.sh"
export FI_LOG_LEVEL=info FI_LOG_PROV=ofi_rxm
PULLED="rendezvous data pulled by process_vm_readv"
REFUSED="not proved"
KEYLESS="peer pulls our rendezvous offers: no registration"

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
		pp_pair "$name" $port "$srv_pre" "$cli_pre" "$size"
	done
}

SIZES="all 24579 32769 49155 98304 200003 262144"

run default "" "" $SIZES
expect default "$dir/default.srv" "$PULLED" yes
expect default "$dir/default.cli" "$PULLED" yes
expect default "$dir/default.srv" "$KEYLESS" yes
expect default "$dir/default.cli" "$KEYLESS" yes

run refused "FI_OFI_RXM_USE_CMA=0" "" $SIZES
expect refused "$dir/refused.srv" "$PULLED" no
expect refused "$dir/refused.cli" "$PULLED" no
expect refused "$dir/refused.cli" "$KEYLESS" no
expect refused "$dir/refused.srv" "$REFUSED" yes
expect refused "$dir/refused.srv" "same-host rendezvous off" yes

if unshare --pid --fork true 2>/dev/null; then
	run pidns "" "unshare --pid --fork" all 262144
	expect pidns "$dir/pidns.srv" "$PULLED" no
	expect pidns "$dir/pidns.cli" "$PULLED" no
	expect pidns "$dir/pidns.srv" "$REFUSED" yes
	expect pidns "$dir/pidns.cli" "$REFUSED" yes
fi

PP_PROV="shm;ofi_rxm"
run shmcore "" "" all 262144
expect shmcore "$dir/shmcore.srv" "$PULLED" yes
expect shmcore "$dir/shmcore.cli" "$PULLED" yes
expect shmcore "$dir/shmcore.cli" "$KEYLESS" yes
# Beyond shm;ofi_rxm's 16 KiB eager size a message is pulled, not segmented through the ring.
run shmmid "" "" 20000
expect shmmid "$dir/shmmid.srv" "$PULLED" yes
expect shmmid "$dir/shmmid.cli" "$PULLED" yes
run shmcoreoff "FI_OFI_RXM_USE_CMA=0" "" 262144
expect shmcoreoff "$dir/shmcoreoff.cli" "$PULLED" no
expect shmcoreoff "$dir/shmcoreoff.srv" "$REFUSED" yes
if unshare --pid --fork true 2>/dev/null; then
	run shmpidns "" "unshare --pid --fork" 262144
	expect shmpidns "$dir/shmpidns.srv" "$PULLED" no
	expect shmpidns "$dir/shmpidns.srv" "$REFUSED" yes
else
	echo "pid namespace part skipped: unshare --pid not allowed here"
fi
unset PP_PROV
[ $status -eq 0 ] && echo "PASS: same-host rendezvous used, refused and unproved as expected"
exit $status
