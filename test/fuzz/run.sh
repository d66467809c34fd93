#!/bin/sh
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) against the
# decoder sources they test and runs each for FUZZ_SECONDS (default 60), starting from the
# committed corpus (new inputs go to a scratch copy, so the tree stays unchanged).
# Prints the executions per target; exits non-zero if any target finds a crash.
# Usage: run.sh [build-dir]   (env: FUZZ_SECONDS, CLANGXX)
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${top_builddir:-.}/fuzz-out}
seconds=${FUZZ_SECONDS:-60}
cxx=${CLANGXX:-clang++}

if ! command -v "$cxx" >/dev/null 2>&1; then
	echo "installing clang for libFuzzer"
	(apt-get install -y clang libclang-rt-14-dev >/dev/null 2>&1 ||
	 sudo apt-get install -y clang libclang-rt-14-dev >/dev/null 2>&1) ||
		{ echo "clang is not available; cannot fuzz" >&2; exit 1; }
fi
mkdir -p "$out"
# config.h lives in the build tree; fall back to an empty one (decoders need no options).
config_dir=${top_builddir:-$out}
[ -f "$config_dir/config.h" ] || { config_dir=$out; : > "$out/config.h"; }
flags="-std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-I$srcdir/include -I$srcdir -I$config_dir -D_GNU_SOURCE"

# target-name  sources...
targets="tcp_wire:prov/tcp/tcp_wire.cpp
tcp_cm:prov/tcp/tcp_cm_message.cpp
rxm_wire:prov/rxm/rxm_wire.cpp
rxm_cm_data:prov/rxm/rxm_cm_data.cpp"

status=0
summary=$out/summary.txt
: > "$summary"
for entry in $targets; do
	name=${entry%%:*}
	sources=$(echo "${entry#*:}" | tr ',' ' ')
	exe=$out/fuzz_$name
	# shellcheck disable=SC2086
	if ! (cd "$srcdir" && $cxx $flags test/fuzz/fuzz_$name.cpp $sources -o "$exe"); then
		echo "$name: BUILD FAILED" | tee -a "$summary"
		status=1
		continue
	fi
	work=$out/corpus_$name
	rm -rf "$work"
	mkdir -p "$work"
	cp "$srcdir"/test/fuzz/corpus/$name/* "$work"/ 2>/dev/null
	log=$out/fuzz_$name.log
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		"$exe" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 \
		-artifact_prefix="$out/crash_${name}_" "$work" > "$log" 2>&1
	rc=$?
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	if [ $rc -eq 0 ]; then
		echo "$name: ok, ${execs:-?} executions in ${seconds}s" | tee -a "$summary"
	else
		echo "$name: FAILED (exit $rc), see $log and $out/crash_${name}_*" | tee -a "$summary"
		grep -E "ERROR|runtime error|SUMMARY" "$log" | head -5
		status=1
	fi
done
exit $status
