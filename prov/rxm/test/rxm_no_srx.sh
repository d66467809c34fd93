#!/bin/sh
# The loopback tests again without shared receive contexts (FI_OFI_RXM_USE_SRX=0): every
# connection posts its own receive buffers, which tcp flushes when the connection goes down.
[ -n "$top_builddir" ] || top_builddir=$(cd "$(dirname "$0")/../../.." && pwd)
FI_OFI_RXM_USE_SRX=0 exec "$top_builddir/prov/rxm/test/rxm_loopback" \
	--gtest_filter='RxmLoopback.*:RxmConnLifetime.*'
