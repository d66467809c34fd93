#!/usr/bin/env bash
# Configures and builds the project out of tree in ${BUILD_DIR:-build}.
# Extra arguments go to configure (e.g. --enable-verbs=no).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$top/build}

"$top/scripts/install-deps.sh"
if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ]; then
	(cd "$top" && ./autogen.sh >/dev/null 2>&1) || { echo "autogen.sh failed" >&2; exit 1; }
fi
mkdir -p "$build"
cd "$build"
if [ ! -f Makefile ] || [ $# -gt 0 ]; then
	"$top/configure" -q --prefix="$build/install" "$@"
fi
make -j"$(nproc)"
