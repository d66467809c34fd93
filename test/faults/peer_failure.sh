#!/bin/sh
# The peer-failure cases but NeverAccepts and StoppedSender (never_accepts.sh and
# stopped_sender.sh run them with short timeouts).
exec "$top_builddir/test/faults/peer_failure_test" --gtest_filter='-*NeverAccepts*:*StoppedSender*'
