# Adversarial tests (samehost_identity): see test/adversarial/README.md. Owned by one author to keep
# merges apart; add check_PROGRAMS / TESTS here.
#
# Issue 15, findings 2 (same-host rendezvous pointed at a bystander process) and 4 (a peer's
# identity claimed from another address or instance). Loopback only; ephemeral ports.
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/sh_bystander_test test/adversarial/sh_socket_owner_test \
	test/adversarial/ident_takeover_test
TESTS += test/adversarial/sh_bystander_test test/adversarial/sh_socket_owner_test \
	test/adversarial/ident_takeover_test
test_adversarial_sh_bystander_test_SOURCES = test/adversarial/sh_bystander_test.cpp \
	test/adversarial/sh_bystander.h \
	test/adversarial/ident_forged_peer.cpp test/adversarial/ident_forged_peer.h \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_sh_bystander_test_LDADD = $(UNIT_TEST_LIBS)
test_adversarial_sh_socket_owner_test_SOURCES = test/adversarial/sh_socket_owner_test.cpp \
	test/adversarial/sh_bystander.h
test_adversarial_sh_socket_owner_test_LDADD = $(UNIT_TEST_LIBS)
test_adversarial_ident_takeover_test_SOURCES = test/adversarial/ident_takeover_test.cpp \
	test/adversarial/ident_forged_peer.cpp test/adversarial/ident_forged_peer.h \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_ident_takeover_test_LDADD = $(UNIT_TEST_LIBS)
endif
endif
endif
