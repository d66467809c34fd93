#!/bin/bash
# Runs the fabtests suite against one provider on this host (server and client both local
# unless addresses are given) and reports each test as Pass, Fail, Notrun or Excluded.
#
# usage: runfabtests.sh [-t unit|functional|benchmarks|short|quick|all] [-v] [-e REGEX]
#                       [-T SECONDS] [-b BINDIR] [-L LIBDIR] [-R PORT_BASE]
#                       PROVIDER [SERVER_ADDR CLIENT_ADDR]
#   -t  test set (default quick): quick < short < all; unit, functional, benchmarks select
#       every test of that kind
#   -v  print the output of every test (failures are always printed)
#   -e  exclude tests whose command line matches REGEX (may be repeated)
#   -T  per-test timeout in seconds (default 30)
#   -b  directory holding unit/, functional/, benchmarks/ (default $top_builddir/fabtests)
#   -L  library directory put first on LD_LIBRARY_PATH ("" = system libfabric;
#       default $top_builddir/.libs when top_builddir is set)
#   -R  first TCP port to use (default 22200); each client/server test takes two ports
#   -X  an extra exclude file (may be repeated), e.g. the system library's known bugs
# Environment: FT_DEADLINE=epoch seconds: tests that could not finish by then are not
# started (reported Notrun), to bound a run under emulation. FT_PORT_CHECK=0: do not look
# for ports in use (a private host or VM).
# Test exit codes: 0 pass, 61 (FI_ENODATA) or 38 (FI_ENOSYS) not run, anything else fail.
# Exclude lists: excludes/<provider>.exclude next to this script, with ';' in the provider
# name written as '_' (tcp;ofi_rxm -> tcp_ofi_rxm.exclude). One REGEX per line, '#' starts
# the reason. "REGEX :: case1,case2" instead skips only those cases of a unit test (passed
# to it as -x case1,case2). The last line of output is "N passed, N failed, N skipped".
set -u

here=$(cd "$(dirname "$0")" && pwd)
set_name=quick
verbose=0
timeout_sec=30
excludes=()
case_skips=()     # "REGEX :: cases" entries
extra_exclude_files=()
bindir=${top_builddir:+$top_builddir/fabtests}
libdir_set=0
libdir=""
port=22200

while getopts "t:ve:T:b:L:R:X:h" opt; do
	case $opt in
	t) set_name=$OPTARG ;;
	v) verbose=1 ;;
	e) excludes+=("$OPTARG") ;;
	T) timeout_sec=$OPTARG ;;
	b) bindir=$OPTARG ;;
	L) libdir=$OPTARG; libdir_set=1 ;;
	R) port=$OPTARG ;;
	X) extra_exclude_files+=("$OPTARG") ;;
	*) sed -n '2,26p' "$0"; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -ne 1 ] && [ $# -ne 3 ]; then
	sed -n '2,26p' "$0"
	exit 2
fi
prov=$1
server_addr=${2:-127.0.0.1}
client_addr=${3:-127.0.0.1}
case $set_name in
unit|functional|benchmarks|short|quick|all) ;;
*) echo "unknown test set '$set_name'" >&2; exit 2 ;;
esac
if [ -z "$bindir" ] || [ ! -d "$bindir" ]; then
	echo "no test binaries: give -b BINDIR (or set top_builddir)" >&2
	exit 2
fi
if [ $libdir_set = 0 ] && [ -n "${top_builddir:-}" ]; then
	libdir=$top_builddir/.libs
fi
if [ -n "$libdir" ]; then
	export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi

for exclude_file in "$here/excludes/${prov//;/_}.exclude" \
		"${extra_exclude_files[@]+"${extra_exclude_files[@]}"}"; do
	[ -f "$exclude_file" ] || continue
	while IFS= read -r line; do
		pattern=${line%%#*}
		pattern=${pattern%"${pattern##*[![:space:]]}"}  # trailing blanks
		[ -n "$pattern" ] || continue
		case $pattern in
		*" :: "*) case_skips+=("$pattern") ;;
		*) excludes+=("$pattern") ;;
		esac
	done < "$exclude_file"
done

# The suite. Columns: sets (q = quick, s = short, a = all; quick is part of short and all,
# short of all), mode (single = one process, cs = server + client), test command line.
read -r -d '' SUITE <<'LIST'
q single fi_getinfo_test
q single fi_domain_test
q single fi_eq_test
q single fi_cq_test
q single fi_mr_test
q single fi_cntr_test
q single fi_av_test -e rdm
q single fi_setopt_test -e msg
q single fi_setopt_test -e rdm
q single fi_ep_test -e msg
q single fi_ep_test -e rdm
q cs fi_msg -e msg
q cs fi_msg -e rdm
s cs fi_msg -e msg -S all -I 5
s cs fi_msg -e rdm -S all -I 5
q cs fi_msg -e rdm -E
s cs fi_msg -e msg -E
s cs fi_msg -e msg -c sread
s cs fi_msg -e rdm -c fd
s cs fi_msg -e msg -c yield
q cs fi_tagged -e rdm
q cs fi_tagged_peek -e rdm
q cs fi_av_xfer -e rdm
q cs fi_rdm_multi_client -e rdm
q cs fi_rdm_atomic -e rdm
q single fi_rdm_collective -n 3
q single fi_rdm_collective -n 8
q cs fi_flood -e msg
q cs fi_flood -e rdm
q cs fi_msg_epoll -e msg
q cs fi_msg_epoll -e rdm
s cs fi_msg_epoll -e msg -S all -I 3
q cs fi_msg_sockets -e msg
q cs fi_cq_data -e msg
q cs fi_cq_data -e rdm
q cs fi_cm_data -e msg
q cs fi_inject -e msg
q cs fi_inject -e rdm
q cs fi_multi_recv -e rdm
q cs fi_multi_ep -e rdm
s cs fi_multi_recv -e msg
q cs fi_recv_cancel -e msg
q cs fi_recv_cancel -e rdm
q cs fi_unexpected_msg -e msg
q cs fi_unexpected_msg -e rdm
q cs fi_rma -e msg -o write
q cs fi_rma -e msg -o read
q cs fi_rma -e msg -o writedata
q cs fi_rma -e rdm -o write
q cs fi_rma -e rdm -o read
q cs fi_rma -e rdm -o writedata
q cs fi_rma_bad_key -e msg
q cs fi_rma_bad_key -e rdm
q cs fi_msg_pingpong -e msg -I 100
q cs fi_msg_pingpong -e rdm -I 100
s cs fi_msg_pingpong -e msg -S all -I 100
s cs fi_msg_pingpong -e rdm -S all -I 100
q cs fi_tagged_pingpong -e rdm -I 100
s cs fi_msg_pingpong -e msg -t counter -I 100
q cs fi_bw -e msg -I 100
q cs fi_bw -e rdm -I 100
s cs fi_bw -e rdm -S all -I 50
s cs fi_bw -e rdm -S all -I 50 -w 10 -v
s cs fi_msg_pingpong -e msg -S all -I 20 -v
s cs fi_msg_pingpong -e rdm -S all -I 20 -v
q cs fi_tagged_bw -e rdm -I 100
q cs fi_msg_pingpong -e msg -S 1,4096,98304 -M 65536 -I 20 -c sread -F context -v
q cs fi_bw -e rdm -S 8,65536,1048576 -M 1048576 -I 128 -c sread -v
s cs fi_tagged_bw -e rdm -S all -I 50 -v
q cs fi_rma_bw -e msg -o write -I 100
q cs fi_rma_bw -e rdm -o write -I 100
q cs fi_rma_bw -e rdm -o read -I 100
q cs fi_rma_bw -e rdm -o writedata -I 100
s cs fi_rma_bw -e msg -o read -S all -I 20 -v
s cs fi_rma_bw -e msg -o writedata -S all -I 20 -v
s cs fi_rma_bw -e rdm -o write -S all -I 20 -w 5 -v
s cs fi_rma_bw -e rdm -o read -S all -I 20 -v
s cs fi_rma_bw -e rdm -o writedata -S all -I 20 -v
a cs fi_msg_pingpong -e msg -S all -I 1000 -c sread
a cs fi_bw -e msg -S all -I 500
a cs fi_msg -e rdm -S all -I 50 -U
LIST

in_set() { # tags kind
	local tags=$1 kind=$2
	case $set_name in
	quick) [[ $tags == *q* ]] ;;
	short) [[ $tags == *q* || $tags == *s* ]] ;;
	all) true ;;
	*) [ "$kind" = "$set_name" ] ;;
	esac
}

find_binary() {
	local name=$1 dir
	for dir in unit functional benchmarks; do
		if [ -x "$bindir/$dir/$name" ]; then
			echo "$dir $bindir/$dir/$name"
			return 0
		fi
	done
	return 1
}

passed=0 failed=0 skipped=0
# Builtins rather than programs in the per-test loop: under emulation (the Soft-RoCE VM)
# every exec costs seconds.
# A pipe nobody writes to makes `read -t` a sleep without exec (coproc needs no /dev/fd).
if coproc PAUSE_PIPE { read -r _; } 2>/dev/null; then
	pause() { read -r -t "$1" -u "${PAUSE_PIPE[0]}" _ || true; }
else
	pause() { sleep "$1"; }
fi
logdir=$(mktemp -d /tmp/runfabtests.XXXXXX)
trap 'rm -rf "$logdir"' EXIT

report() { # name result seconds [log files...]
	local name=$1 result=$2 secs=$3
	shift 3
	printf '%-60s %-9s %ss\n' "$name" "$result" "$secs"
	if [ "$result" = Fail ] || [ $verbose = 1 ]; then
		local f
		for f in "$@"; do
			[ -s "$f" ] && sed "s/^/    $(basename "$f" .log): /" "$f"
		done
	fi
}

classify() { # exit codes... -> Pass|Notrun|Fail
	local rc result=Pass
	for rc in "$@"; do
		case $rc in
		0) ;;
		61|38) [ $result = Pass ] && result=Notrun ;;
		*) result=Fail ;;
		esac
	done
	# A side that could not run makes the other side's connection errors meaningless.
	for rc in "$@"; do
		case $rc in 61|38) result=Notrun ;; esac
	done
	echo $result
}

while read -r tags mode cmdline; do
	[ -n "$tags" ] || continue
	read -r -a words <<< "$cmdline"
	name=${words[0]}
	args=("${words[@]:1}")
	if ! found=$(find_binary "$name"); then
		kind=unknown
	else
		kind=${found%% *}
		binary=${found#* }
	fi
	in_set "$tags" "$kind" || continue
	label="$name ${args[*]}"
	label=${label% }

	excluded=""
	for pattern in "${excludes[@]+"${excludes[@]}"}"; do
		if [[ $label =~ $pattern ]]; then
			excluded=$pattern
			break
		fi
	done
	if [ -n "$excluded" ]; then
		report "$label" Excluded 0
		skipped=$((skipped + 1))
		continue
	fi
	# fi_rdm_atomic walks every (op, datatype) with every form and 1-4 iocs: thousands of
	# round trips, 5-10 s on an idle machine and 25 s at a load of 12 on 2 cores (CI runs
	# loaded). It gets three times the per-test timeout rather than every test more.
	test_timeout=$timeout_sec
	case $name in fi_rdm_atomic) test_timeout=$((timeout_sec * 3)) ;; esac
	# FT_DEADLINE (epoch seconds) bounds a whole run, e.g. under emulation in CI.
	if [ -n "${FT_DEADLINE:-}" ] && [ $(( EPOCHSECONDS + test_timeout )) -gt "$FT_DEADLINE" ]; then
		report "$label" Notrun 0
		echo "    not started: the run's time budget (FT_DEADLINE) is spent"
		skipped=$((skipped + 1))
		continue
	fi
	skip_cases=""
	for entry in "${case_skips[@]+"${case_skips[@]}"}"; do
		entry_pattern=${entry%% :: *}
		if [[ $label =~ $entry_pattern ]]; then
			skip_cases="${skip_cases:+$skip_cases,}${entry#* :: }"
		fi
	done
	[ -n "$skip_cases" ] && args+=(-x "$skip_cases")
	if [ $kind = unknown ]; then
		report "$label" Notrun 0
		echo "    binary $name not found in $bindir"
		skipped=$((skipped + 1))
		continue
	fi

	start=$EPOCHSECONDS
	slog=$logdir/server.log clog=$logdir/client.log
	: > "$slog"; : > "$clog"
	if [ "$mode" = single ]; then
		timeout -k 5 "$test_timeout" "$binary" -p "$prov" "${args[@]}" > "$clog" 2>&1
		result=$(classify $?)
	else
		# Skip ports another program (say, a concurrent run) is listening on.
		for _ in 1 2 3 4 5 6 7 8; do
			[ "${FT_PORT_CHECK:-1}" = 0 ] && break
			in_use=$(ss -Hltn "( sport = :$port or sport = :$((port + 1)) )" 2>/dev/null)
			[ -z "$in_use" ] && break
			port=$((port + 2))
			[ $port -gt 22998 ] && port=22200
		done
		oob_port=$port fabric_port=$((port + 1))
		port=$((port + 2))
		[ $port -gt 22998 ] && port=22200
		# -E without a port would use the default OOB port: give it ours.
		cargs=()
		for a in "${args[@]}"; do
			[ "$a" = -E ] && a="-E$oob_port"
			cargs+=("$a")
		done
		FT_OOB_PORT=$oob_port timeout -k 5 "$test_timeout" "$binary" -p "$prov" \
			"${cargs[@]}" -s "$server_addr" -B "$fabric_port" > "$slog" 2>&1 &
		server_pid=$!
		pause 0.2
		FT_OOB_PORT=$oob_port timeout -k 5 "$test_timeout" "$binary" -p "$prov" \
			"${cargs[@]}" -P "$fabric_port" "$server_addr" > "$clog" 2>&1
		client_rc=$?
		wait $server_pid
		server_rc=$?
		result=$(classify $server_rc $client_rc)
		if [ "$result" = Fail ]; then
			echo "exit codes: server $server_rc, client $client_rc" >> "$clog"
		fi
	fi
	secs=$(( EPOCHSECONDS - start ))
	report "$label" "$result" "$secs" "$slog" "$clog"
	case $result in
	Pass) passed=$((passed + 1)) ;;
	Fail) failed=$((failed + 1)) ;;
	*) skipped=$((skipped + 1)) ;;
	esac
done <<< "$SUITE"

echo "# provider: $prov, set: $set_name, library: ${libdir:-system}"
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
