# Adversarial tests (isolation): see test/adversarial/README.md. Owned by one author to keep
# merges apart; add check_PROGRAMS / TESTS here.
EXTRA_DIST += test/adversarial/README.md
# Isolation of RMA memory (issue 15, findings 1 and 8): tcp and tcp;ofi_rxm on loopback,
# ephemeral ports only.
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/iso_mr_test
TESTS += test/adversarial/iso_mr_test
test_adversarial_iso_mr_test_SOURCES = test/adversarial/iso_mr_test.cpp \
	test/adversarial/iso_harness.cpp test/adversarial/iso_harness.h \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_iso_mr_test_LDADD = $(UNIT_TEST_LIBS)
check_PROGRAMS += test/adversarial/iso_attacker_test
TESTS += test/adversarial/iso_attacker_test test/adversarial/iso_rndv_write.sh
test_adversarial_iso_attacker_test_SOURCES = test/adversarial/iso_attacker_test.cpp \
	test/adversarial/iso_harness.cpp test/adversarial/iso_harness.h \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_iso_attacker_test_LDADD = libfabric_internal.la -lgtest -lpthread
endif
endif
endif
EXTRA_DIST += test/adversarial/iso_rndv_write.sh
