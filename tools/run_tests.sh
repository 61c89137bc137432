#!/bin/sh
# Runs the test binary (make check, make asan) and keeps its whole output in
# LOG. When tests fail, it names them again at the end, where a truncated CI
# log still shows them, then runs each failed test once more on its own: a
# test that fails again fails the run; one that passes alone is named as
# FLAKY (it depends on the machine's load: a timing bug in the test or the
# code, to be found, not forgotten) and the run passes.
#   usage: tools/run_tests.sh TEST_BIN LOG [criterion args...]
set -u
bin=$1; log=$2; shift 2
rcfile=$log.rc
rm -f "$rcfile" "$log.again"
{ "$bin" "$@"; echo $? > "$rcfile"; } 2>&1 | tee "$log"
rc=$(cat "$rcfile" 2>/dev/null || echo 1)
[ "$rc" = 0 ] && exit 0
echo "== tests failed (exit $rc); the failures (whole log: $log):"
grep -a -E '^\[(----|FAIL)\]' "$log" | tail -40
failed=$(grep -a -o -E '^\[FAIL\] [A-Za-z0-9_]+::[A-Za-z0-9_]+' "$log" |
    sed 's/^\[FAIL\] //' | sort -u)
if [ -z "$failed" ]; then
    echo "== no failed test named (a crash of the runner?): failing"
    exit "$rc"
fi
n=$(echo "$failed" | wc -l)
if [ "$n" -gt 3 ]; then
    echo "== $n tests failed: not a flaky test, failing"
    exit "$rc"
fi
status=0
for t in $failed; do
    f=$(echo "$t" | sed 's/::/\//')
    echo "== running $t again on its own"
    if "$bin" --filter "$f" >> "$log.again" 2>&1; then
        echo "== FLAKY: $t failed in the full run and passed alone (see $log)"
    else
        echo "== $t failed again on its own:"
        grep -a -E '^\[(----|FAIL)\]' "$log.again" | tail -20
        status=1
    fi
done
exit $status
