#!/bin/sh
# Renders every man page with groff in warning mode; any warning or error fails the test.
command -v groff >/dev/null 2>&1 || { echo "groff not installed: skipped"; exit 77; }
status=0
for page in "$top_srcdir"/man/man[0-9]/*.[0-9]; do
	out=$(groff -man -Tutf8 -ww -z "$page" 2>&1)
	if [ -n "$out" ]; then
		echo "$page:"; echo "$out"; status=1
	fi
done
exit $status
