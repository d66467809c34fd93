# Adversarial tests (shares): see test/adversarial/README.md. Owned by one author to keep
# merges apart; add check_PROGRAMS / TESTS here.
# Bounded shares in rxm (issue 15, findings 5, 7, 9): tcp;ofi_rxm on loopback, ephemeral ports.
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/share_send_test
TESTS += test/adversarial/share_send_test
test_adversarial_share_send_test_SOURCES = test/adversarial/share_send_test.cpp \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_share_send_test_LDADD = $(UNIT_TEST_LIBS)
endif
endif
endif
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/share_rndv_test
TESTS += test/adversarial/share_rndv_test
test_adversarial_share_rndv_test_SOURCES = test/adversarial/share_rndv_test.cpp \
	test/adversarial/raw_peer.cpp test/adversarial/raw_peer.h \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_share_rndv_test_LDADD = $(UNIT_TEST_LIBS)
endif
endif
endif
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/share_unexpected_test
TESTS += test/adversarial/share_unexpected_test
test_adversarial_share_unexpected_test_SOURCES = test/adversarial/share_unexpected_test.cpp \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h test/leaks/process_usage.h
test_adversarial_share_unexpected_test_LDADD = $(UNIT_TEST_LIBS)
endif
endif
endif
