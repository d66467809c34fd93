#!/usr/bin/env bash
# Installs the Debian packages the build and the tests need, when they are missing.
# Usage: scripts/install-deps.sh [extra-package...]
set -euo pipefail

packages=(g++ make autoconf automake libtool pkg-config libgtest-dev
	libibverbs-dev librdmacm-dev   # verbs provider (built when present)
	libfabric-dev                  # reference headers for the ABI test
	libfabric-bin                  # Debian's unmodified fi_info / fi_pingpong as test clients
	openmpi-bin libopenmpi-dev     # Open MPI's ofi MTL over tcp;ofi_rxm (test/mpi)
	iproute2                       # ss: test scripts wait for a server to listen
	python3 groff-base man-db "$@")

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: missing packages: ${missing[*]} (run as root or install them)" >&2
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
