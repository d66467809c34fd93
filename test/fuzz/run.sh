#!/bin/sh
# Builds the libFuzzer targets with clang (-fsanitize=fuzzer,address,undefined) against the
# decoder sources they test and runs each for FUZZ_SECONDS (default 60), starting from the
# committed corpus (new inputs go to a scratch copy, so the tree stays unchanged).
# The getinfo target needs the whole library (core, util, tcp, rxm; not verbs): it is compiled
# once with the same instrumentation (-fsanitize=fuzzer-no-link) into OUT/lib.
# Prints the executions per target; exits non-zero if any target finds a crash.
# Usage: run.sh [out-dir]   (env: FUZZ_SECONDS, CLANGXX, FUZZ_TARGETS="tcp_wire getinfo ...",
#                            FUZZ_JOBS for the library compile, default 2)
set -u
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-${top_builddir:-.}/fuzz-out}
seconds=${FUZZ_SECONDS:-60}
cxx=${CLANGXX:-clang++}
jobs=${FUZZ_JOBS:-2}

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
rxm_cm_data:prov/rxm/rxm_cm_data.cpp
getinfo:@library"

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

status=0
summary=$out/summary.txt
: > "$summary"
libflags="-std=c++20 -g -O1 -fsanitize=fuzzer-no-link,address,undefined \
	-fno-sanitize-recover=undefined -I$out/lib -I$srcdir/include -I$srcdir -D_GNU_SOURCE"
for entry in $targets; do
	name=${entry%%:*}
	case " ${FUZZ_TARGETS:-$name} " in *" $name "*) ;; *) continue ;; esac
	sources=$(echo "${entry#*:}" | tr ',' ' ')
	target_flags=$flags
	if [ "$sources" = @library ]; then
		if ! sources=$(build_library); then
			echo "$name: LIBRARY BUILD FAILED" | tee -a "$summary"
			status=1
			continue
		fi
		target_flags="$libflags -fsanitize=fuzzer -lpthread"
	fi
	exe=$out/fuzz_$name
	# shellcheck disable=SC2086
	if ! (cd "$srcdir" && $cxx $target_flags test/fuzz/fuzz_$name.cpp $sources -o "$exe"); then
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
