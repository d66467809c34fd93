#!/bin/bash
# make check hook: fi_config_walk (every configuration fi_getinfo advertises, each operation
# form checked end to end) against OUR library (the walk binds ephemeral 127.0.0.1 ports),
# for each "provider:ep_type" in CONFIG_WALK_CASES. Exit 77 (automake SKIP) when the walker is not built.
set -u
: "${top_builddir:?run from make check (top_builddir unset)}"
walker="$top_builddir/fabtests/functional/fi_config_walk"
[ -x "$walker" ] || { echo "no $walker"; exit 77; }
cases=${CONFIG_WALK_CASES:-"tcp:msg tcp;ofi_rxm:rdm shm:msg shm;ofi_rxm:rdm"}
status=0
for c in $cases; do
	prov=${c%%:*} ep=${c##*:}
	echo "== fi_config_walk -p '$prov' -e $ep"
	timeout 900 "$walker" -p "$prov" -e "$ep" || status=1
done
exit $status
