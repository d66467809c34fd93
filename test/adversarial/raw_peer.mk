# The raw-socket attacker (raw_peer.*) that the adversarial tests share, and its own test.
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/raw_peer_test
TESTS += test/adversarial/raw_peer_test
test_adversarial_raw_peer_test_SOURCES = test/adversarial/raw_peer_test.cpp \
	test/adversarial/raw_peer.cpp test/adversarial/raw_peer.h \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_raw_peer_test_LDADD = $(UNIT_TEST_LIBS)
endif
endif
endif

# Authorization keys: connections presenting another key are refused before any data moves.
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/auth_key_test
TESTS += test/adversarial/auth_key_test
test_adversarial_auth_key_test_SOURCES = test/adversarial/auth_key_test.cpp \
	test/adversarial/raw_peer.cpp test/adversarial/raw_peer.h \
	test/badinput/fabric_harness.cpp test/badinput/fabric_harness.h
test_adversarial_auth_key_test_LDADD = $(UNIT_TEST_LIBS)
endif
endif
endif
