#!/bin/bash
# Checks that our fi_pingpong speaks the upstream tool's control protocol: runs server and
# client in every pairing of {our fi_pingpong, Debian's /usr/bin/fi_pingpong} on the same
# library, for msg and rdm endpoints, untagged and tagged, with data checks.
#
# usage: pingpong-interop.sh OUR_FI_PINGPONG [LIBDIR]   (LIBDIR "" or absent = system lib)
set -u
ours=${1:?usage: $0 OUR_FI_PINGPONG [LIBDIR]}
libdir=${2:-}
theirs=/usr/bin/fi_pingpong
. "$(dirname "$0")/../../test/wait_listen.sh"
[ -x "$theirs" ] || { echo "no $theirs (package libfabric-bin)"; exit 77; }
port=$((22900 + ($$ % 40) * 2))
passed=0 failed=0

run_pair() { # server client provider args...
	local server=$1 client=$2 prov=$3
	shift 3
	local log
	log=$(mktemp /tmp/pp-interop.XXXXXX)
	LD_LIBRARY_PATH=$libdir timeout 60 "$server" -p "$prov" -B $port "$@" > "$log.s" 2>&1 &
	local spid=$!
	wait_listen $port
	LD_LIBRARY_PATH=$libdir timeout 60 "$client" -p "$prov" -P $port "$@" 127.0.0.1 > "$log.c" 2>&1
	local crc=$?
	wait $spid
	local src=$?
	port=$((port + 2))
	local name="$(basename "$(dirname "$server")")/$(basename "$server") <- $(basename "$(dirname "$client")")/$(basename "$client") -p '$prov' $*"
	if [ $src -eq 0 ] && [ $crc -eq 0 ]; then
		printf '%-80s Pass\n' "$name"
		passed=$((passed + 1))
	else
		printf '%-80s Fail (server %d, client %d)\n' "$name" $src $crc
		sed 's/^/    server: /' "$log.s"
		sed 's/^/    client: /' "$log.c"
		failed=$((failed + 1))
	fi
	rm -f "$log" "$log.s" "$log.c"
}

for args in "tcp|-e msg" "tcp;ofi_rxm|-e rdm" "tcp;ofi_rxm|-e rdm -m tagged"; do
	prov=${args%%|*}
	read -r -a opts <<< "${args#*|}"
	for pair in "$ours $theirs" "$theirs $ours" "$ours $ours"; do
		read -r s c <<< "$pair"
		run_pair "$s" "$c" "$prov" "${opts[@]}" -I 20 -S all -c
	done
done
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
