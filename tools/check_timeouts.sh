#!/bin/sh
# check_timeouts: every Criterion .timeout in the tests (TestSuite and Test
# alike) has one value. All tests run in one runner (build/test_all), several
# at a time; libcriterion 2.4's runner leaks its 48-byte timeout record when a
# test starts with an earlier deadline than one already running (a shorter
# timeout started after a longer one), and LeakSanitizer then makes `make asan`
# exit non-zero after every test passed. Equal timeouts give deadlines in
# start order, which it handles. Reproduced outside the project: two tests,
# `.timeout = 20` sleeping 0.6 s and `.timeout = 10` sleeping 0.1 s, -j2, built
# with -fsanitize=address: "48 byte(s) leaked"; both at 10: none.
#
# Prints each .timeout that differs from TESTS_TIMEOUT and exits 1 if any does.
# Run by `make check`. Usage: tools/check_timeouts.sh [ROOT]   (default .)
set -eu
cd "$(dirname "$0")/.."
root=${1:-.}
want=600 # TESTS_TIMEOUT: seconds; the draughts perft tests under ASan need it
bad=$(grep -rnE '\.timeout[[:space:]]*=' "$root/tests" --include='*.c' |
      grep -E '(Test|TestSuite)\(|^[^:]+:[0-9]+:[[:space:]]+\.timeout' |
      grep -vE "\.timeout[[:space:]]*=[[:space:]]*$want([^0-9]|$)" || true)
if [ -n "$bad" ]; then
    echo "$bad"
    echo "check_timeouts: Criterion .timeout other than $want (tools/check_timeouts.sh says why)"
    exit 1
fi
