#!/bin/sh
# A same-host sender stopped right after its rendezvous request (peer_failure_test's
# StoppedSenderMidRendezvousOverShm), once with the same-host pull off (the receive must time
# out after FI_OFI_RXM_RNDV_READ_TIMEOUT, 2 s here instead of 30) and once with it on (the
# receiver reads the stopped sender's pages itself).
set -e
test="$top_builddir/test/faults/peer_failure_test"
FI_OFI_RXM_RNDV_READ_TIMEOUT=2 FI_OFI_RXM_USE_CMA=0 "$test" --gtest_filter='*StoppedSender*'
FI_OFI_RXM_RNDV_READ_TIMEOUT=2 FI_OFI_RXM_USE_CMA=1 exec "$test" --gtest_filter='*StoppedSender*'
