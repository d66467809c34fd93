#!/bin/sh
# A send to a listener that accepts TCP but never answers the CM request must fail in bounded
# time (20 s here). Known bug, XFAIL: it waits forever.
exec "$top_builddir/test/faults/peer_failure_test" --gtest_filter='*NeverAccepts*'
