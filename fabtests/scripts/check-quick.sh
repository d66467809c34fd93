#!/bin/bash
# make check hook: runs the quick fabtests set against OUR library (the build tree's .libs)
# for each provider named in FABTESTS_CHECK_PROVIDERS (default: the providers whose quick
# set is known to pass). Exit 77 (automake SKIP) when the library offers none of them.
set -u
: "${top_builddir:?run from make check (top_builddir unset)}"
here=$(cd "$(dirname "$0")" && pwd)
providers=${FABTESTS_CHECK_PROVIDERS:-"tcp,tcp;ofi_rxm,tcp;ofi_rxm-shm,shm,shm;ofi_rxm"}
# "tcp;ofi_rxm" runs with rxm's defaults: both processes of each test move to shared memory
# once connected (FI_OFI_RXM_USE_SHM, prov/rxm/README.md, "Same-host peers over shm").
# "tcp;ofi_rxm-shm": the same with FI_OFI_RXM_USE_SHM=0, so rxm over loopback TCP stays
# covered too.
# shm runs the RMA programs (fi_rma, fi_rma_bad_key, fi_rma_bw) itself, and under shm;ofi_rxm
# every message above rxm's SAR limit (fi_bw -S ...1048576) is a rendezvous through shm's
# fi_read: rxm offers its process_vm_readv rendezvous only over byte-stream cores.
# A port range of our own per run, so concurrent make check runs rarely collide.
port_base=$((22200 + ($$ % 300) * 2))

status=0 ran=0
IFS=,
for prov in $providers; do
	unset IFS
	# The caller's FI_OFI_RXM_USE_SHM (if any) reaches every entry but the -shm one.
	shm_env=()
	case $prov in *-shm) prov=${prov%-shm} shm_env=(FI_OFI_RXM_USE_SHM=0) ;; esac
	out=$(env "${shm_env[@]}" "$here/runfabtests.sh" -t quick -T 30 -R "$port_base" \
		"$prov" 2>&1)
	rc=$?
	echo "$out"
	summary=$(echo "$out" | tail -n 1)
	passed=${summary%% passed*}
	if [ "$rc" -ne 0 ]; then
		status=1
	fi
	[ "${passed:-0}" -gt 0 ] && ran=1
	port_base=$((port_base + 100))
done
if [ $status -eq 0 ] && [ $ran -eq 0 ]; then
	echo "no test could run: the providers are not available in this build"
	exit 77
fi
exit $status
