#!/bin/sh
# The stalled-message attack with per-connection receive buffers (no shared receive context):
# each staller holds only its own connection's buffers, so the legitimate client is served.
FI_OFI_RXM_USE_SRX=0 exec "$top_builddir/test/adversarial/srx_stall_test"
