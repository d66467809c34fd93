#!/bin/bash
# sread_count.sh BUILD [N1 N2]: system calls and context switches per round trip of the
# same-host blocking ping-pong the bench times (benchlib/samehost.py: fi_msg_pingpong -e rdm
# -S 64 -c sread), counted by syscount.so (built here from syscount.c) in both processes at
# N1 and N2 iterations; the difference over the N2-N1 round trips in between is printed per
# call ("calls/ready": ready = returned > 0), both processes together. Libraries: ours over
# shm;ofi_rxm, ours over tcp;ofi_rxm with the shm switch, the system's shm provider.
# SPIN=0 counts our sleeping path alone (FI_WAIT_SPIN_USEC=0: blocking reads do not poll
# first); unset, ours run with their default.
# Run inside a private network namespace: unshare -rn bash -c 'ip link set lo up; ...'.
set -u
build=$(cd "$1" && pwd)
n1=${2:-200} n2=${3:-2200}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
gcc -shared -fPIC -O2 -o "$out/syscount.so" "$here/syscount.c" -ldl || exit 1
pp=$build/fabtests/benchmarks/.libs/fi_msg_pingpong
[ -x "$pp" ] || pp=$build/fabtests/benchmarks/fi_msg_pingpong
port=${PORT:-9700}

run() { # run TAG N PROVIDER LIBPATH ENV...
	local tag=$1 n=$2 prov=$3 lib=$4; shift 4
	port=$((port + 4))
	local args=(-p "$prov" -e rdm -S 64 -I "$n" -w 10 -c sread -m "-E=$((port + 2))" -T 20)
	env ${lib:+LD_LIBRARY_PATH=$lib} "$@" SYSCOUNT_OUT="$out/$tag.$n" \
		LD_PRELOAD="$out/syscount.so" "$pp" "${args[@]}" -B $port >"$out/$tag.$n.srv" 2>&1 &
	local server=$!
	env ${lib:+LD_LIBRARY_PATH=$lib} "$@" SYSCOUNT_OUT="$out/$tag.$n" \
		LD_PRELOAD="$out/syscount.so" "$pp" "${args[@]}" -P $port 127.0.0.1 \
		>"$out/$tag.$n.cli" 2>&1 || { echo "$tag $n: client failed"; cat "$out/$tag.$n.cli"; }
	wait $server || { echo "$tag $n: server failed"; cat "$out/$tag.$n.srv"; }
}

per_round_trip() { # per_round_trip TAG: the table row of one library
	awk -v n1="$n1" -v n2="$n2" -v tag="$1" '
		FILENAME ~ "\\." n1 "$" { c[$2] -= $3; r[$2] -= $4; next }
		{ c[$2] += $3; r[$2] += $4 }
		END {
			d = n2 - n1; line = tag ":"; total = 0
			for (k in c) {
				if (c[k] == 0) continue
				line = line sprintf(" %s %.2f/%.2f", k, c[k] / d, r[k] / d)
				if (k !~ /^csw/) total += c[k] / d
			}
			printf "%s\n  total system calls %.2f per round trip\n", line, total
		}' "$out/$1.$n1" "$out/$1.$n2"
}

for n in $n1 $n2; do
	run ours_shm $n "shm;ofi_rxm" "$build/.libs" ${SPIN:+FI_WAIT_SPIN_USEC=$SPIN}
	run ours $n "tcp;ofi_rxm" "$build/.libs" FI_OFI_RXM_USE_SHM=1 \
		${SPIN:+FI_WAIT_SPIN_USEC=$SPIN}
	run system $n shm ""
done
for tag in ours_shm ours system; do
	per_round_trip $tag
done
rm -rf "$out"
