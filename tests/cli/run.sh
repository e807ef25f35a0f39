#!/bin/sh
# run.sh: every tests/cli/test_*.sh against $KVSCOPE_BIN, with a summary.
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export KVSCOPE_DATA=data
for t in tests/cli/test_*.sh; do
    echo "== $t"
    . "$t"
done
echo "cli tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
