#!/bin/sh
# run.sh: every tests/cli/test_*.sh against $KVSCOPE_BIN, with a summary
# and each file's seconds (make test's time budget is 20 minutes on two cores).
cd "$(dirname "$0")/../.." || exit 1
. tests/cli/lib.sh
export KVSCOPE_DATA=data
for test_file in tests/cli/test_*.sh; do
    echo "== $test_file"
    # under the sanitizers, skip the files that check packaging (install,
    # man page), drive through tmux the view test_view.sh drives, or draw
    # every figure (two minutes under ASan): make test's time is bounded
    case "${KVSCOPE_SANITIZED:-}:$test_file" in
    ?*:*/test_install.sh | ?*:*/test_view_tmux.sh | ?*:*/test_plot.sh)
        echo "   SKIP under the sanitizers (run in the plain pass)"; continue ;;
    esac
    t0=$(date +%s.%N)
    . "$test_file"
    awk -v a="$t0" -v b="$(date +%s.%N)" -v n="${test_file#tests/cli/}" 'BEGIN { printf "   (%s: %.1f s)\n", n, b - a }'
done
echo "cli tests: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
