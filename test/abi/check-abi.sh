#!/bin/sh
# ABI test: our include/rdma must describe the same binary interface as libfabric 1.17's.
#
# abi_dump.c prints every size, offset, enumerator and constant of the public headers; it is
# built once against the reference headers (Debian's libfabric-dev in /usr/include) and once
# against ours, and the two outputs must be identical.  abi_dispatch.c calls every static
# inline wrapper with recording stubs in the ops tables; the transcripts must be identical.
# abi_types.c checks at compile time that fields, typedefs and functions (static inline
# wrappers included) have the reference types.  Both are also compiled as C++ against our headers, which must be usable from C++.
#
# Environment: top_srcdir (set by `make check`); ABI_REFERENCE_INCLUDE overrides the
# reference include directory, ABI_OUR_INCLUDE the one under test (used to show the test
# fails on a tampered copy of our headers).

set -u

srcdir=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
reference_include=${ABI_REFERENCE_INCLUDE:-/usr/include}
our_include=${ABI_OUR_INCLUDE:-$srcdir/include}
abi_dir=$srcdir/test/abi
CC=${CC:-gcc}
CXX=${CXX:-g++}

if [ ! -f "$reference_include/rdma/fabric.h" ]; then
	echo "SKIP: reference headers $reference_include/rdma/fabric.h not installed (libfabric-dev)"
	exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/check-abi.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT

status=0
fail() {
	echo "FAIL: $*"
	status=1
}

# Deprecated fields and functions are part of the ABI, so using them is expected here.
quiet="-Wno-deprecated-declarations"

# The reference build sees only the system include path; ours puts our tree first so
# that <rdma/...> resolves to our headers.
if ! $CC -std=c99 $quiet -o "$work/dump_reference" "$abi_dir/abi_dump.c" \
	-I"$reference_include" 2>"$work/reference.err"; then
	cat "$work/reference.err"
	fail "abi_dump.c does not compile against the reference headers (regenerate it?)"
fi
if ! $CC -std=c99 $quiet -o "$work/dump_ours" "$abi_dir/abi_dump.c" \
	-I"$our_include" 2>"$work/ours.err"; then
	cat "$work/ours.err"
	fail "abi_dump.c does not compile against our headers in $our_include"
fi

# A header missing from our tree would silently be taken from the reference directory.
$CC -std=c99 -M "$abi_dir/abi_dump.c" -I"$our_include" 2>/dev/null | tr ' \\' '\n\n' |
	grep "^$reference_include/rdma/" >"$work/leaked.txt"
if [ -s "$work/leaked.txt" ]; then
	cat "$work/leaked.txt"
	fail "our headers pull in reference headers instead of their own"
fi

if [ -x "$work/dump_reference" ] && [ -x "$work/dump_ours" ]; then
	"$work/dump_reference" >"$work/reference.txt" || fail "reference dump did not run"
	"$work/dump_ours" >"$work/ours.txt" || fail "our dump did not run"
	if ! diff -u "$work/reference.txt" "$work/ours.txt" >"$work/dump.diff"; then
		echo "--- reference ($reference_include)  +++ ours ($our_include)"
		sed '1,2d' "$work/dump.diff"
		fail "ABI dump differs: $(grep -c '^[-+][^-+]' "$work/dump.diff") lines"
	else
		echo "ABI dump identical: $(wc -l <"$work/ours.txt") facts"
	fi
fi

# Deprecation marks are API rather than ABI, but applications see them as warnings.
for tree in reference ours; do
	if [ $tree = reference ]; then include=$reference_include; else include=$our_include; fi
	LC_ALL=C $CC -std=c99 -fsyntax-only "$abi_dir/abi_dump.c" -I"$include" 2>&1 |
		grep -o "'[^']*' is deprecated" | sort -u >"$work/deprecated_$tree.txt"
done
if ! diff -u "$work/deprecated_reference.txt" "$work/deprecated_ours.txt" \
	>"$work/deprecated.diff"; then
	sed '1,2d' "$work/deprecated.diff"
	fail "deprecated functions or fields differ"
fi

# The static inline wrappers are compiled into applications, so what they call is ABI too.
if $CC -std=gnu11 $quiet -o "$work/dispatch_reference" "$abi_dir/abi_dispatch.c" \
	-I"$reference_include" 2>"$work/dispatch_reference.err"; then
	"$work/dispatch_reference" >"$work/dispatch_reference.txt" ||
		fail "reference dispatch test did not run"
else
	cat "$work/dispatch_reference.err"
	fail "abi_dispatch.c does not compile against the reference headers (regenerate it?)"
fi
if $CC -std=gnu11 $quiet -o "$work/dispatch_ours" "$abi_dir/abi_dispatch.c" \
	-I"$our_include" 2>"$work/dispatch_ours.err"; then
	"$work/dispatch_ours" >"$work/dispatch_ours.txt" || fail "our dispatch test did not run"
else
	cat "$work/dispatch_ours.err"
	fail "abi_dispatch.c does not compile against our headers"
fi
if [ -s "$work/dispatch_reference.txt" ] && [ -s "$work/dispatch_ours.txt" ]; then
	if ! diff -u "$work/dispatch_reference.txt" "$work/dispatch_ours.txt" \
		>"$work/dispatch.diff"; then
		echo "--- reference wrappers  +++ our wrappers (diff of call transcripts)"
		sed '1,2d' "$work/dispatch.diff"
		fail "static inline wrappers dispatch differently"
	else
		echo "Inline wrapper dispatch identical: $(grep -c -- '->' "$work/dispatch_ours.txt") calls"
	fi
fi

if ! $CC -std=gnu11 $quiet -fsyntax-only "$abi_dir/abi_types.c" \
	-I"$reference_include" 2>"$work/types_reference.err"; then
	cat "$work/types_reference.err"
	fail "abi_types.c does not compile against the reference headers (regenerate it?)"
fi
if ! $CC -std=gnu11 $quiet -fsyntax-only "$abi_dir/abi_types.c" \
	-I"$our_include" 2>"$work/types_ours.err"; then
	grep -E 'error|static assertion' "$work/types_ours.err"
	fail "types of fields, typedefs or functions differ from the reference"
else
	echo "ABI types identical"
fi

# Applications that put our include directory on -I see warnings from it; keep it clean.
# (-Wtype-limits fires on the dump's own signedness probe, not on the headers.)
if ! $CC -std=c99 -pedantic -Wall -Wextra -Wno-type-limits $quiet -fsyntax-only \
	"$abi_dir/abi_dump.c" -I"$our_include" 2>"$work/c99.err" || [ -s "$work/c99.err" ]; then
	cat "$work/c99.err"
	fail "our headers are not clean C99 (gcc -std=c99 -pedantic -Wall -Wextra)"
else
	echo "C99 compile of our headers clean"
fi

if ! $CXX -std=c++20 -x c++ $quiet -fsyntax-only -Wall -Wextra "$abi_dir/abi_dump.c" \
	-I"$our_include" 2>"$work/cxx.err" || [ -s "$work/cxx.err" ]; then
	cat "$work/cxx.err"
	fail "our headers are not clean C++20 (g++ -std=c++20 -Wall -Wextra)"
else
	echo "C++20 compile of our headers clean"
fi

exit $status
