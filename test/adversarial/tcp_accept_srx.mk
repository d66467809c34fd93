# Adversarial tests (tcp_accept_srx): see test/adversarial/README.md. Owned by one author to keep
# merges apart; add check_PROGRAMS / TESTS here.
#
# accept_flood_test: idle connections against a tcp;ofi_rxm server's listener (issue 15,
# finding 6). Attacker and legitimate client are forked processes; source addresses
# 127.0.0.2-9, ephemeral ports.
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/accept_flood_test
TESTS += test/adversarial/accept_flood_test
test_adversarial_accept_flood_test_SOURCES = test/adversarial/accept_flood_test.cpp \
	test/adversarial/accept_idle_attacker.cpp test/adversarial/accept_idle_attacker.h \
	test/adversarial/accept_legit_client.cpp test/adversarial/accept_legit_client.h \
	test/adversarial/accept_rdm_peer.cpp test/adversarial/accept_rdm_peer.h
test_adversarial_accept_flood_test_LDADD = libfabric_internal.la -lgtest -lpthread
endif
endif
endif

# srx_stall_test: raw-socket peers that send an rxm message header and stop, against a
# tcp;ofi_rxm server's shared receive buffers (issue 15, finding 3); srx_stall_nosrx.sh runs
# it again with FI_OFI_RXM_USE_SRX=0.
if HAVE_GTEST
if HAVE_TCP
if HAVE_RXM
check_PROGRAMS += test/adversarial/srx_stall_test
TESTS += test/adversarial/srx_stall_test test/adversarial/srx_stall_nosrx.sh
test_adversarial_srx_stall_test_SOURCES = test/adversarial/srx_stall_test.cpp \
	test/adversarial/raw_peer.cpp test/adversarial/raw_peer.h \
	test/adversarial/accept_legit_client.cpp test/adversarial/accept_legit_client.h \
	test/adversarial/accept_rdm_peer.cpp test/adversarial/accept_rdm_peer.h
test_adversarial_srx_stall_test_LDADD = libfabric_internal.la -lgtest -lgtest_main -lpthread
endif
endif
endif
EXTRA_DIST += test/adversarial/srx_stall_nosrx.sh
