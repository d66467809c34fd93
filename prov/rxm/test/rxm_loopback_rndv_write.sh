#!/bin/sh
# The loopback integration tests again with write-based rendezvous (FI_OFI_RXM_USE_RNDV_WRITE).
[ -n "$top_builddir" ] || top_builddir=$(cd "$(dirname "$0")/../../.." && pwd)
FI_OFI_RXM_USE_RNDV_WRITE=1 exec "$top_builddir/prov/rxm/test/rxm_loopback"
