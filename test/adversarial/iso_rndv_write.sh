#!/bin/sh
# The public-API attacker of iso_attacker_test against write-based rendezvous: blind
# fi_writes must not land in the receive buffers the server exposed to its client.
[ -n "$top_builddir" ] || top_builddir=$(cd "$(dirname "$0")/../.." && pwd)
FI_OFI_RXM_USE_RNDV_WRITE=1 exec "$top_builddir/test/adversarial/iso_attacker_test"
