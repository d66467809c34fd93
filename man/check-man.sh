#!/bin/sh
# Renders every man page with groff in warning mode; any warning or error fails the test.
# Alias pages are one ".so man3/<page>.3" line, resolved like man(1) does: relative to the
# top of the manual tree, hence -I on the man directory.
command -v groff >/dev/null 2>&1 || { echo "groff not installed: skipped"; exit 77; }
mandir="$top_srcdir/man"
status=0
for page in "$mandir"/man[0-9]/*.[0-9]; do
	out=$(groff -man -Tutf8 -ww -z -I "$mandir" "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "$page:"; echo "$out"; status=1
	fi
done
# "man fi_send" must work: every function a man3 NAME section lists needs a page.
for page in "$mandir"/man3/*.3; do
	grep -q '^\.so ' "$page" && continue
	for name in $(sed -n '/^\.SH NAME/,/^\.SH/p' "$page" | sed '1d;$d' | tr '\n' ' ' |
			sed 's/\\-.*//' | tr ',' ' '); do
		if [ ! -f "$mandir/man3/$name.3" ]; then
			echo "$page: no page for $name (run man/update-aliases.sh)"; status=1
		fi
	done
done
# "make install" must install every page: each file needs a dist_man_MANS entry.
lists="$(cat "$mandir/Makefile.include" "$mandir/Makefile.aliases.include") "
for page in "$mandir"/man[0-9]/*.[0-9]; do
	entry="man/${page#"$mandir"/}"
	case "$lists" in
	*"$entry "* | *"$entry
"*) ;;
	*) echo "$page: not listed in man/Makefile.include"; status=1 ;;
	esac
done
exit $status
