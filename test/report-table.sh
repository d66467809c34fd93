#!/bin/bash
# Prints the reliability table of fabtests/README.md (faults tried, bad inputs tried, fuzz
# executions) from real runs: it runs the fault and bad-input test programs of a build tree
# and reads the summary of the last fuzz run, then prints one Markdown row per test case with
# its outcome and the numbers the test printed. Nothing is typed in by hand.
# Run it in a private network namespace (the fault tests use fixed ports 25100-25199):
#   nsrun NAME test/report-table.sh BUILD_DIR [FUZZ_OUT]   (FUZZ_OUT default BUILD_DIR/fuzz-out)
# Exit status: non-zero if a case failed that is not a known gap (XFAIL in make check).
set -u
build=$(cd "${1:?usage: report-table.sh BUILD_DIR [FUZZ_OUT]}" && pwd)
fuzz_out=${2:-$build/fuzz-out}
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
