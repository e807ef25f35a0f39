# test_plot_sanitized.sh: the figures' code under ASan and UBSan. test_plot.sh
# draws every figure in the plain pass; under the sanitizers (KVSCOPE_SANITIZED)
# it is skipped for time, and this file draws four quick figures instead
# (tables, scripts, images and the run's transaction of plot_io), and one
# refused output.

if [ -z "${KVSCOPE_SANITIZED:-}" ]; then
    ok "plot under the sanitizers: the plain pass runs test_plot.sh instead"
else
    ps_tmp=$(mktemp -d)
    run "plot memory paged mla loss --quick (sanitized)" $KV plot memory paged mla loss --quick --out "$ps_tmp/p"
    missing=""
    for f in memory paged mla loss; do
        for ext in tsv gp; do [ -s "$ps_tmp/p/$f.$ext" ] || missing="$missing $f.$ext"; done
        if command -v gnuplot >/dev/null 2>&1; then [ -s "$ps_tmp/p/$f.png" ] || missing="$missing $f.png"; fi
    done
    [ "$status" -eq 0 ] && [ ! -s "$err" ] && [ -z "$missing" ] &&
        ok "plot memory paged mla loss: data, scripts and images, quiet on stderr" ||
        bad "plot memory paged mla loss: data, scripts and images, quiet on stderr" "exit $status, missing:$missing" \
            "$(head -c 400 "$err")"
    : >"$ps_tmp/a-file"
    expect_fail "plot --out a file, not a folder (sanitized)" 2 "is not a directory" $KV plot memory --quick --out "$ps_tmp/a-file"
    rm -rf "$ps_tmp"
fi
