#!/bin/sh
# The loopback tests again with FI_OFI_RXM_USE_SHM=1: every pair of endpoints of the process
# moves to shm once connected (the process holds both ends, so the proof holds), so every
# protocol, RMA, atomics, collectives, cancel, simultaneous connect and restarted peers run
# across the switch.
[ -n "$top_builddir" ] || top_builddir=$(cd "$(dirname "$0")/../../.." && pwd)
FI_OFI_RXM_USE_SHM=1 exec "$top_builddir/prov/rxm/test/rxm_loopback"
