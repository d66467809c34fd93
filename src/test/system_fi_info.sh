#!/bin/sh
# Runs Debian's unmodified /usr/bin/fi_info (built against libfabric 1.17) on our library:
# provider listing, FI_PROVIDER filtering, and the variables fi_info -e prints.
# Skips (77) when fi_info is not installed.
FI_INFO=${FI_INFO:-/usr/bin/fi_info}
[ -x "$FI_INFO" ] || { echo "no $FI_INFO"; exit 77; }
LIBDIR="${top_builddir:-.}/.libs"
[ -e "$LIBDIR/libfabric.so.1" ] || { echo "no $LIBDIR/libfabric.so.1"; exit 99; }
export LD_LIBRARY_PATH="$LIBDIR"
unset FI_PROVIDER FI_LOG_LEVEL FI_LOG_PROV FI_LOG_SUBSYS

fail() { echo "FAIL: $*"; exit 1; }

# The loader must pick our library, not the system one.
ldd "$FI_INFO" | grep -q "$LIBDIR/libfabric.so.1" || fail "fi_info does not load $LIBDIR"

list=$("$FI_INFO" -l 2>&1) || fail "fi_info -l: $list"
# Every provider we list must be one of ours (the system library would show e.g. sockets).
echo "$list" | grep -q '^sockets:' && fail "fi_info -l shows the system library: $list"
for prov in $(echo "$list" | sed -n 's/^\([a-z_]*\):$/\1/p'); do
	case $prov in
	tcp|verbs|shm|ofi_rxm) ;;
	*) fail "unexpected provider $prov" ;;
	esac
done
if echo "$list" | grep -q '^ofi_rxm:'; then
	excluded=$(FI_PROVIDER='^ofi_rxm' "$FI_INFO" -l 2>&1)
	echo "$excluded" | grep -q '^ofi_rxm:' && fail "FI_PROVIDER=^ofi_rxm still lists ofi_rxm"
fi

# fi_info -e only prints variables once fi_getinfo finds something to run on.
if "$FI_INFO" >/dev/null 2>&1; then
	vars=$("$FI_INFO" -e 2>&1) || fail "fi_info -e: $vars"
	for var in FI_PROVIDER FI_LOG_LEVEL FI_LOG_PROV FI_LOG_SUBSYS FI_UNIVERSE_SIZE; do
		echo "$vars" | grep -q "^# $var: " || fail "fi_info -e does not list $var"
	done
	# FI_PROVIDER=tcp keeps tcp and the layerings on it (as 1.17 does: an RDM application
	# then gets tcp;ofi_rxm), ofi_rxm only the layered ones.
	if "$FI_INFO" -p tcp >/dev/null 2>&1; then
		names=$(FI_PROVIDER=tcp "$FI_INFO" | sed -n 's/^provider: //p' | sort -u | tr '\n' ' ')
		[ "$names" = "tcp tcp;ofi_rxm " ] || fail "FI_PROVIDER=tcp gave: $names"
		names=$(FI_PROVIDER=tcp "$FI_INFO" -t FI_EP_RDM | sed -n 's/^provider: //p' | sort -u)
		[ "$names" = "tcp;ofi_rxm" ] || fail "FI_PROVIDER=tcp -t FI_EP_RDM gave: $names"
		names=$(FI_PROVIDER=ofi_rxm "$FI_INFO" | sed -n 's/^provider: //p' | sort -u)
		echo "$names" | grep -qv ';ofi_rxm$' && fail "FI_PROVIDER=ofi_rxm gave: $names"
	fi
else
	echo "no provider usable here: skipped fi_info -e and FI_PROVIDER checks"
fi
echo "ok"
