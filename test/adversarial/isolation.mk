# Adversarial tests (isolation): see test/adversarial/README.md. Owned by one author to keep
# merges apart; add check_PROGRAMS / TESTS here.
EXTRA_DIST += test/adversarial/README.md
