#!/bin/sh
# The peer-failure cases but NeverAccepts (never_accepts.sh runs it with a short timeout).
exec "$top_builddir/test/faults/peer_failure_test" --gtest_filter='-*NeverAccepts*'
