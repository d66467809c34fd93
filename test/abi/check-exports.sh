#!/bin/sh
# Link-level ABI test: our libfabric.so.1 must export what libfabric 1.17's does, so that a
# binary linked against Debian's library resolves every symbol at the same version.
#
# Compared with the reference library (Debian's libfabric1): the soname, the version nodes
# with their parents, and every defined dynamic symbol with its kind (function/object), its
# version and whether that version is the default (name@@V) or a compat alias (name@V,
# shown by objdump in parentheses).
#
# Environment: top_builddir (set by `make check`); ABI_REFERENCE_LIB and ABI_OUR_LIB override
# the two libraries.

set -u

reference_lib=${ABI_REFERENCE_LIB:-/usr/lib/x86_64-linux-gnu/libfabric.so.1}
our_lib=${ABI_OUR_LIB:-${top_builddir:-.}/.libs/libfabric.so.1}

if ! command -v objdump >/dev/null; then
	echo "SKIP: objdump not available"
	exit 77
fi
if [ ! -f "$reference_lib" ]; then
	echo "SKIP: reference library $reference_lib not installed (libfabric1)"
	exit 77
fi
if [ ! -f "$our_lib" ]; then
	echo "FAIL: $our_lib not built"
	exit 1
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/check-exports.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT

# soname and "Version definitions" (a node, then its parent indented below it), without
# the index/flags/hash columns.
describe_versions() {
	objdump -p "$1" | awk '
		/^ *SONAME/ { print "soname " $2 }
		/^Version definitions:/ { in_defs = 1; next }
		in_defs && /^$/ { in_defs = 0 }
		in_defs && /^[0-9]/ { print "node " $4 }
		in_defs && /^\t/ { print "  parent " $1 }'
}

# Defined dynamic symbols: name, binding, kind and version (objdump -T columns: address,
# binding, kind, section, size, version, name).  Weak ones count too: a leaked C++ inline
# or template would show up as one.
describe_symbols() {
	objdump -T "$1" | awk '$4 != "*UND*" && NF == 7 { print $7, $2, $3, $6 }' | sort
}

status=0
for what in versions symbols; do
	describe_$what "$reference_lib" >"$work/reference_$what.txt"
	describe_$what "$our_lib" >"$work/ours_$what.txt"
	if [ ! -s "$work/reference_$what.txt" ]; then
		echo "FAIL: could not read $what of $reference_lib"
		status=1
	elif ! diff -u "$work/reference_$what.txt" "$work/ours_$what.txt" >"$work/$what.diff"
	then
		echo "--- reference ($reference_lib)  +++ ours ($our_lib)"
		sed '1,2d' "$work/$what.diff"
		echo "FAIL: exported $what differ"
		status=1
	else
		echo "Exported $what identical: $(wc -l <"$work/ours_$what.txt") lines"
	fi
done
exit $status
