#!/bin/sh
# A send to a listener that accepts TCP but never answers the CM request must fail in bounded
# time (20 s here). ofi_rxm fails it after FI_OFI_RXM_CONN_TIMEOUT seconds (default 30, set to
# 5 here so the test stays short).
FI_OFI_RXM_CONN_TIMEOUT=5 exec "$top_builddir/test/faults/peer_failure_test" \
	--gtest_filter='*NeverAccepts*'
