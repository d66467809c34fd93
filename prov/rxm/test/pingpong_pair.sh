# Sourced by the rxm tests that run fabtests' fi_msg_pingpong pairs over "tcp;ofi_rxm" on
# 127.0.0.1 and read rxm's log (rxm_cma.sh, rxm_shm_pidns.sh). Finds the program (exit 77,
# automake's SKIP, when it is not built), points the library path at the build tree, and
# defines:
#   pp_pair NAME PORT SERVER_PREFIX CLIENT_PREFIX SIZE: one server and its client, -S SIZE,
#     every byte checked (-v), the out-of-band exchange on PORT+1; the prefixes (variable
#     settings, or a command such as `unshare --pid --fork`) go before each side; logs are
#     appended to $dir/NAME.srv and $dir/NAME.cli; a side that fails sets status=1;
#     PP_PROV names another provider (default tcp;ofi_rxm).
#   expect NAME FILE PATTERN yes|no: PATTERN is (yes) or is not (no) in FILE, else status=1
#     and the file's tail.
# The caller sets dir (a scratch directory) and status=0.
[ -n "${top_builddir:-}" ] || top_builddir=$(cd "$(dirname "$0")/../../.." && pwd)
PP="$top_builddir/fabtests/benchmarks/fi_msg_pingpong"
[ -x "$PP" ] || { echo "SKIP: $PP not built"; exit 77; }
LD_LIBRARY_PATH="$top_builddir/.libs"
export LD_LIBRARY_PATH
. "$(dirname "$0")/../../../test/wait_listen.sh"

pp_pair() {
	_name=$1 _port=$2 _srv_pre=$3 _cli_pre=$4 _size=$5
	_args="-p ${PP_PROV:-tcp;ofi_rxm} -e rdm -S $_size -I 3 -w 1 -v -E=$((_port + 1)) -T 30"
	# shellcheck disable=SC2086
	env $_srv_pre timeout 60 "$PP" $_args -B "$_port" >>"$dir/$_name.srv" 2>&1 &
	_server=$!
	wait_listen $((_port + 1)) # the out-of-band port: -B listens only after the exchange
	# shellcheck disable=SC2086
	if ! env $_cli_pre timeout 50 "$PP" $_args -P "$_port" 127.0.0.1 >>"$dir/$_name.cli" 2>&1
	then
		echo "FAIL: $_name: client, size $_size"
		status=1
	fi
	if ! wait $_server; then
		echo "FAIL: $_name: server, size $_size"
		status=1
	fi
}

expect() { # expect NAME FILE PATTERN yes|no
	if grep -q "$3" "$2"; then _found=yes; else _found=no; fi
	if [ "$_found" != "$4" ]; then
		echo "FAIL: $1: '$3' in $(basename "$2"): $_found, expected $4"
		tail -20 "$2"
		status=1
	fi
}
