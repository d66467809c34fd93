#!/bin/bash
# Prints the reliability table of fabtests/README.md (faults tried, bad inputs tried, fuzz
# executions) from real runs: it runs the fault and bad-input test programs of a build tree
# and reads the summary of the last fuzz run, then prints one Markdown row per test case with
# its outcome and the numbers the test printed. Nothing is typed in by hand.
# Run it in a private network namespace (the fault tests use fixed ports 25100-25199):
#   nsrun NAME test/report-table.sh BUILD_DIR [FUZZ_OUT [SLOW_LOG]]
# FUZZ_OUT defaults to BUILD_DIR/fuzz-out; SLOW_LOG, the output of a test/run-slow.sh run, adds
# one row per sanitizer/memcheck program, the soak counts and each slow job's duration.
# Exit status: non-zero if a case failed that is not a known gap (XFAIL in make check).
set -u
build=$(cd "${1:?usage: report-table.sh BUILD_DIR [FUZZ_OUT [SLOW_LOG]]}" && pwd)
fuzz_out=${2:-$build/fuzz-out}
slow_log=${3:-}
export top_builddir=$build
# As in never_accepts.sh: rxm gives up on an unanswered connection after 5 s instead of 30.
export FI_OFI_RXM_CONN_TIMEOUT=5
status=0

# Runs one gtest program and prints a row per test case: | area | case | outcome | output |.
# Cases whose names match $3 are known gaps: a failure there prints "known gap (XFAIL)".
rows() { # area program [known-gap-regex] [gtest args...]
	local area=$1 prog=$2 gap=${3:-^$}  # no case is a known gap unless named
	shift 3 2>/dev/null || shift $#
	if [ ! -x "$build/$prog" ]; then
		echo "| $area | \`$prog\` | not built | |"
		status=1
		return
	fi
	# stdout only: the library's warnings on stderr are not the tests' measurements.
	"$build/$prog" --gtest_color=no "$@" 2>/dev/null | awk -v area="$area" -v gap="$gap" '
		function flush(outcome) {
			gsub(/\|/, "\\|", printed)
			printf "| %s | `%s` | %s | %s |\n", area, name, outcome, printed
			printed = ""
		}
		/^\[ RUN      \]/ { name = $4; printed = ""; inside = 1; next }
		/^\[       OK \]/ { flush("pass"); inside = 0; next }
		/^\[  SKIPPED \]/ && inside { flush("skipped"); inside = 0; next }
		/^\[  FAILED  \]/ && inside {
			if (name ~ gap) flush("**known gap (XFAIL)**")
			else { printed = "see the test output"; flush("**FAIL**"); bad = 1 }
			inside = 0; next
		}
		inside && /^[a-z0-9]/ && !/: Failure$/ { printed = printed (printed ? "; " : "") $0 }
		END { exit bad }' || status=1
}

echo "| Area | Case | Outcome | What the run printed |"
echo "|---|---|---|---|"
rows "fault: peer killed / absent" test/faults/peer_failure_test
rows "fault: connection cut (tcp)" test/faults/connection_cut_test
rows "fault: receiver overrun" test/faults/receiver_overrun_test
rows "bad input" test/badinput/badinput_test
rows "bad input: undefined flags" test/badinput/unknown_flags_test
rows "RMA security" test/badinput/rma_security_test
rows "threads" test/threads/thread_safe_test

# The slow jobs' own result lines (run.sh, memcheck.sh, soak), as they printed them.
if [ -n "$slow_log" ]; then
	awk '
		function row(area, name, ok, text) {
			gsub(/\|/, "\\|", text)
			printf "| %s | `%s` | %s | %s |\n", area, name, ok ? "pass" : "**FAIL**", text
			if (!ok) bad = 1
		}
		/^asan: [^ ]+: exit / { split($0, f, ": "); row("ASan+UBSan", f[2], f[3] ~ /^exit 0, 0 /, f[3]) }
		/^tsan: [^ ]+: exit / { split($0, f, ": "); row("TSan", f[2], f[3] ~ /^exit 0 /, f[3]) }
		/^memcheck: [^ ]+: exit / { split($0, f, ": "); row("valgrind memcheck", f[2], f[3] ~ /^exit 0, 0 /, f[3]) }
		/^(parent|child ?): endpoints / { side = $1; sub(/:$/, "", side); text = $0; sub(/^[^:]*: /, "", text)
			row("soak", side, text !~ /timed out/, text) }
		/^soak: (PASS|FAIL)$/ { row("soak", "verdict", $2 == "PASS", $2) }
		/^== slow job [a-z]+: / { name = $4; sub(/:$/, "", name); row("slow job", name, $5 == "passed", $5 " in " $7 " s") }
		END { exit bad }' "$slow_log" || status=1
fi

total=0
if [ -f "$fuzz_out/summary.txt" ]; then
	while read -r line; do
		name=${line%%:*}
		execs=$(echo "$line" | sed -n 's/.*ok, \([0-9]*\) executions in \([0-9]*\)s.*/\1/p')
		secs=$(echo "$line" | sed -n 's/.*executions in \([0-9]*\)s.*/\1/p')
		if [ -n "$execs" ]; then
			echo "| fuzz | \`fuzz_$name\` | pass: no crash, leak or sanitizer report | $execs executions in $secs s |"
			total=$((total + execs))
		else
			echo "| fuzz | \`fuzz_$name\` | **FAIL** | ${line#*: } |"
			status=1
		fi
	done < "$fuzz_out/summary.txt"
	echo
	echo "Fuzzing: $total executions in total ($(date -r "$fuzz_out/summary.txt" -u +%Y-%m-%d))."
else
	echo
	echo "Fuzzing: no run found in $fuzz_out (run \`make fuzz\` first)."
fi
exit $status
