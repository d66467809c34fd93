#!/bin/sh
# The connection-timeout test of rxm_loopback with FI_OFI_RXM_CONN_TIMEOUT=2 (about 5 s: a
# blocking and a polling CQ each wait out the timeout once).
FI_OFI_RXM_CONN_TIMEOUT=2 exec "$top_builddir/prov/rxm/test/rxm_loopback" \
	--gtest_filter='RxmConnect.SendToAPeerThatNeverAcceptsTimesOut'
