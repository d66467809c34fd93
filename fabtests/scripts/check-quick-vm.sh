#!/bin/bash
# The quick fabtests set on `verbs` and `verbs;ofi_rxm`, server and client on 192.0.2.1,
# inside the Soft-RoCE VM (fabtests/scripts/rxe-vm). prov/verbs/test/run-in-vm.sh calls it
# inside the VM; run by hand on a host without an RDMA device it starts the VM itself.
#
#   fabtests/scripts/check-quick-vm.sh BUILD_DIR
#
# Bounded for CI under TCG (no KVM): each test gets FT_VM_TEST_TIMEOUT seconds (default 75),
# the whole run FT_VM_BUDGET seconds (default 660, i.e. 11 minutes), shared equally by the
# providers: tests left when a share is spent are reported as not started (Notrun). Under
# TCG every process start costs ~3-10 s, so the default budget covers about half of the
# quick set (measured: 24 tests of `verbs` in 520 s); FT_VM_BUDGET=1800 runs all of it. Providers: FT_VM_PROVIDERS (default
# "verbs,verbs;ofi_rxm"). Tests that cannot pass on verbs are in excludes/verbs.exclude and
# excludes/verbs_ofi_rxm.exclude with their reasons (runfabtests.sh reads them).
# Exit status: 0 all ran tests passed, 1 a test failed, 77 no RDMA device and no VM here.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-${top_builddir:-}}
if [ -z "$build" ] || [ ! -e "$build/.libs/libfabric.so.1" ]; then
	echo "usage: $0 BUILD_DIR   (a built tree: BUILD_DIR/.libs/libfabric.so.1)" >&2
	exit 2
fi
build=$(cd "$build" && pwd)
addr=192.0.2.1

# On the host: no RDMA device, so go into the VM and run this script there.
if ! ls /sys/class/infiniband/ 2>/dev/null | grep -q . ; then
	[ -n "${FT_VM_INSIDE:-}" ] && { echo "no RDMA device inside the VM" >&2; exit 1; }
	exec "$here/rxe-vm" --timeout $(( ${FT_VM_BUDGET:-660} + 300 )) -- \
		env FT_VM_INSIDE=1 bash "$here/check-quick-vm.sh" "$build"
fi

providers=${FT_VM_PROVIDERS:-"verbs,verbs;ofi_rxm"}
per_test=${FT_VM_TEST_TIMEOUT:-75}
budget=${FT_VM_BUDGET:-660}
deadline=$(( EPOCHSECONDS + budget ))
IFS=, read -r -a provider_list <<< "$providers"
providers_left=${#provider_list[@]}
status=0
IFS=,
for prov in $providers; do
	unset IFS
	left=$(( deadline - EPOCHSECONDS ))
	if [ $left -le $per_test ]; then
		echo "== $prov: skipped, the time budget is spent"
		continue
	fi
	# Each provider gets an equal share of what is left, so both run something.
	share=$(( left / providers_left ))
	providers_left=$(( providers_left - 1 ))
	echo "== quick set, provider $prov, on $addr (${share}s of the ${left}s left)"
	# Every process start costs seconds under TCG, so each test runs once: `verbs` takes
	# the msg endpoint tests and the unit tests without -e, `verbs;ofi_rxm` the rdm ones
	# (rdm under `verbs` is ofi_rxm over verbs again).
	case $prov in
	verbs) split=(-e ' -e rdm') ;;
	*) split=(-e ' -e msg' -e '^fi_[a-z_]+_test$') ;;
	esac
	# runfabtests.sh stops starting tests at FT_DEADLINE (epoch seconds); FT_TIMEOUT is
	# each test's own completion timeout.
	FT_DEADLINE=$(( EPOCHSECONDS + share )) FT_TIMEOUT=$(( per_test / 2 )) FT_PORT_CHECK=0 \
		top_builddir=$build "$here/runfabtests.sh" -t quick -T "$per_test" "${split[@]}" \
		"$prov" "$addr" "$addr" || status=1
done
exit $status
