#!/bin/sh
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) against the
# decoder sources they test and runs each for its time (below), starting from the committed
# corpus (new inputs go to a scratch copy, so the tree stays unchanged).
# The getinfo target needs the whole library (core, util, tcp, rxm; not verbs): it is compiled
# once with the same instrumentation (-fsanitize=fuzzer-no-link) into OUT/lib.
# Each target runs on one core; FUZZ_PARALLEL targets (default 2) run at once, each lane
# taking the longest target left.
# Times per target: the committed corpora of the four decoders reach everything a 60 s run
# reached (test/README.md, "Fuzzing": coverage at start equals coverage at the end of a 60 s
# run), so they run 10-20 s to look further; rxm_wire and getinfo still found inputs late in
# 60 s and keep 60 s. FUZZ_SECONDS sets one time for every target.
# Prints the executions per target; exits non-zero if any target finds a crash.
# Usage: run.sh [out-dir]   (env: FUZZ_SECONDS, CLANGXX, FUZZ_TARGETS="tcp_wire getinfo ...",
#                            FUZZ_JOBS for the library compile, default 2, FUZZ_PARALLEL,
#                            FUZZ_BUILD_ONLY=1 to build the targets and run none)
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${top_builddir:-.}/fuzz-out}
cxx=${CLANGXX:-clang++}
jobs=${FUZZ_JOBS:-2}
parallel=${FUZZ_PARALLEL:-2}

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

# target-name:seconds:sources (comma-separated; @library: the whole library)
targets="tcp_wire:15:prov/tcp/tcp_wire.cpp
tcp_cm:20:prov/tcp/tcp_cm_message.cpp
rxm_wire:60:prov/rxm/rxm_wire.cpp
rxm_cm_data:10:prov/rxm/rxm_cm_data.cpp
getinfo:60:@library"

# Compiles the library sources with the fuzzer's coverage instrumentation (once: skipped
# when no source or header is newer than the last build) and prints the object list.
build_library() {
	lib=$out/lib
	mkdir -p "$lib"
	# Our own config: tcp and rxm (the registry names providers weakly, verbs stays out).
	printf '#define HAVE_TCP 1\n#define HAVE_RXM 1\n' > "$lib/config.h.new"
	cmp -s "$lib/config.h.new" "$lib/config.h" || mv "$lib/config.h.new" "$lib/config.h"
	sources=$(cd "$srcdir" && ls src/*.cpp prov/util/*.cpp prov/tcp/*.cpp prov/rxm/*.cpp)
	if [ ! -f "$lib/stamp" ] || [ -n "$(cd "$srcdir" && find src prov/util prov/tcp prov/rxm \
			include -newer "$lib/stamp" -type f | head -n1)" ]; then
		echo "compiling the library for fuzzing ($jobs jobs)" >&2
		# shellcheck disable=SC2086
		# Files with .symver directives go through GNU as: clang's integrated assembler
		# would keep both the plain and the versioned name, which then collide.
		(cd "$srcdir" && echo $sources | tr ' ' '\n' | xargs -P "$jobs" -I{} sh -c \
			'o='"$lib"'/$(echo {} | tr / _).o; as=; grep -q "[.]symver" {} && as=-fno-integrated-as;
			 '"$cxx $libflags"' $as -c {} -o "$o"') ||
			return 1
		touch "$lib/stamp"
	fi
	for f in $sources; do echo "$lib/$(echo "$f" | tr / _).o"; done
}

libflags="-std=c++20 -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -I$out/lib -I$srcdir/include -I$srcdir -D_GNU_SOURCE"

# Builds the target NAME into OUT/fuzz_NAME unless it is newer than every source and header
# it could use; prints a failure line and fails otherwise.
build_target() { # name sources
	name=$1 sources=$2
	target_flags=$flags
	exe=$out/fuzz_$name
	if [ "$sources" = @library ]; then
		sources=$(build_library) ||
			{ echo "$name: LIBRARY BUILD FAILED" | tee "$out/result_$name"; return 1; }
		target_flags="$libflags -fsanitize=fuzzer -lpthread"
	fi
	[ -x "$exe" ] && [ -z "$(cd "$srcdir" && find src prov/util prov/tcp prov/rxm include \
		test/fuzz/fuzz_$name.cpp -newer "$exe" -type f | head -n1)" ] && return 0
	# shellcheck disable=SC2086
	(cd "$srcdir" && $cxx $target_flags test/fuzz/fuzz_$name.cpp $sources -o "$exe") ||
		{ rm -f "$exe"; echo "$name: BUILD FAILED" | tee "$out/result_$name"; return 1; }
}

# Runs the built target NAME for SECONDS from a scratch copy of its corpus; writes its
# summary line to OUT/result_NAME (and on failure the sanitizer's lines to OUT/detail_NAME).
run_target() { # name seconds
	name=$1 seconds=$2
	exe=$out/fuzz_$name
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
	cov=$(sed -n 's/.*INITED cov: \([0-9]*\) ft: \([0-9]*\).*/\1 (\2 features)/p' "$log")
	cov_end=$(sed -n 's/.*DONE *cov: \([0-9]*\) ft: \([0-9]*\).*/\1 (\2 features)/p' "$log")
	if [ $rc -eq 0 ]; then
		echo "$name: ok, ${execs:-?} executions in ${seconds}s, coverage ${cov:-?} -> ${cov_end:-?}"
	else
		echo "$name: FAILED (exit $rc), see $log and $out/crash_${name}_*"
		grep -E "ERROR|runtime error|SUMMARY" "$log" | head -5 > "$out/detail_$name"
	fi > "$out/result_$name"
	return $rc
}

# The targets asked for, longest first: "name:seconds:sources" lines.
selected=$(for entry in $targets; do
	name=${entry%%:*}
	case " ${FUZZ_TARGETS:-$name} " in *" $name "*) ;; *) continue ;; esac
	rest=${entry#*:}
	echo "$name:${FUZZ_SECONDS:-${rest%%:*}}:${rest#*:}"
done | sort -t: -k2,2nr)

# Building: one at a time (a lock in OUT), so a run waits for a build that run-slow.sh
# --prepare started in the background, then finds the targets up to date.
status=0
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] || rm -f "$out"/result_* "$out"/detail_*
exec 9>"$out/.build.lock"
flock 9
for entry in $selected; do
	name=${entry%%:*}
	sources=$(echo "${entry##*:}" | tr ',' ' ')
	build_target "$name" "$sources" || status=1
done
flock -u 9
[ "${FUZZ_BUILD_ONLY:-0}" = 1 ] && exit $status

# Running: FUZZ_PARALLEL lanes; each target goes to the lane with the least time so far.
lanes=
i=0
while [ $i -lt "$parallel" ]; do lanes="$lanes $i"; eval "lane_$i=; load_$i=0"; i=$((i + 1)); done
for entry in $selected; do
	name=${entry%%:*}
	rest=${entry#*:}
	seconds=${rest%%:*}
	[ -x "$out/fuzz_$name" ] || continue
	best=0
	for l in $lanes; do
		[ "$(eval echo \$load_$l)" -lt "$(eval echo \$load_$best)" ] && best=$l
	done
	eval "lane_$best=\"\$lane_$best $name:$seconds\"; load_$best=\$((load_$best + seconds))"
done
pids=
for l in $lanes; do
	(lane_status=0
	 for job in $(eval echo \$lane_$l); do
		run_target "${job%%:*}" "${job#*:}" || lane_status=1
	 done
	 exit $lane_status) &
	pids="$pids $!"
done
for pid in $pids; do wait "$pid" || status=1; done

summary=$out/summary.txt
: > "$summary"
for entry in $selected; do
	name=${entry%%:*}
	[ -f "$out/result_$name" ] && tee -a "$summary" < "$out/result_$name"
	[ -f "$out/detail_$name" ] && cat "$out/detail_$name"
done
exit $status
