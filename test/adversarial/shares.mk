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
