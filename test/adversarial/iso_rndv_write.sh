#!/bin/sh
# The public-API attacker of iso_attacker_test against write-based rendezvous: blind
# fi_writes must not land in the receive buffers the server exposed to its client.
FI_OFI_RXM_USE_RNDV_WRITE=1 exec "$(dirname "$0")/iso_attacker_test"
