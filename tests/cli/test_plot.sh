# test_plot.sh: `kvscope plot`: every figure's data has its shape, obeys
# the physics (memory grows with context, uncached work above cached, the
# fitted slopes), is byte-identical for the same seed, and draws without a
# word from gnuplot; without gnuplot the data and scripts are still written;
# bad input is one line and exit 2. Timings are never checked.

plot_tmp=$(mktemp -d)
export KVSCOPE_PLOTS=plots

expect_ok "plot --help says how to install gnuplot" 'gnuplot-nox' $KV plot --help
expect_ok "plot is listed in kvscope --help" '^  plot ' $KV --help
run "plot --list" $KV plot --list
ready=$(grep -Ec '^ +[0-9]+  [a-z-]+ +ready' "$out")
waiting=$(grep -Ec '^ +[0-9]+  [a-z-]+ +waiting' "$out")
if [ "$status" -eq 0 ] && [ "$ready" -eq 6 ] && [ "$waiting" -eq 4 ] && [ "$(grep -c 'waits for' "$out")" -eq 4 ]
then ok "plot --list: figures 1-6 ready, 7-10 waiting, each naming what it waits for"
else bad "plot --list: figures 1-6 ready, 7-10 waiting, each naming what it waits for" \
    "exit $status, ready $ready, waiting $waiting" "stdout: $(head -c 600 "$out")"; fi

# --- every figure, quick, drawn when gnuplot is here ------------------------
A=$plot_tmp/a
run "plot --all --quick" $KV plot --all --quick --seed 3 --out "$A"
if [ "$status" -eq 0 ] && [ ! -s "$err" ] && grep -q 'waiting (see --list): 7 paged 8 eviction 9 beam 10 mla' "$out"
then ok "plot --all --quick exits 0, quiet on stderr, names the waiting figures"
else bad "plot --all --quick exits 0, quiet on stderr, names the waiting figures" "exit $status" \
    "stderr: $(head -c 400 "$err")" "stdout: $(head -c 400 "$out")"; fi

# header FILE EXPECTED: the first row, exactly
header() {
    got=$(head -n 1 "$A/$1" 2>/dev/null)
    [ "$got" = "$2" ] && ok "$1: header row" || bad "$1: header row" "want: $2" "got:  $got"
}
# shape FILE ROWS COLS: data rows (after the header) and columns in every row
shape() {
    [ -s "$A/$1" ] || { bad "$1: $2 rows of $3 columns" "no file $1"; return; }
    rows=$(($(wc -l <"$A/$1") - 1))
    cols=$(awk -F'\t' '{ print NF }' "$A/$1" | sort -u | tr '\n' ' ')
    [ "$rows" -eq "$2" ] && [ "$cols" = "$3 " ] && ok "$1: $2 rows of $3 columns" ||
        bad "$1: $2 rows of $3 columns" "got $rows rows, column counts: $cols"
}
# check NAME AWK FILE: an awk program over the data rows prints "ok" or why not
check() {
    [ -s "$A/$3" ] || { bad "$1" "no file $3"; return; }
    said=$(awk -F'\t' "NR > 1 { $2 } END { if (!why) print \"ok\"; else print why }" "$A/$3")
    [ "$said" = ok ] && ok "$1" || bad "$1" "$said"
}
# slope FILE SERIES LO HI: the fitted slope of SERIES lies in [LO, HI]
slope() {
    s=$(awk -F'\t' -v s="$2" '$1 == s { print $6 }' "$A/$1" 2>/dev/null)
    awk -v s="$s" -v lo="$3" -v hi="$4" 'BEGIN { exit !(s != "" && s + 0 >= lo && s + 0 <= hi) }' &&
        ok "$1: $2 slope $s in [$3, $4]" || bad "$1: $2 slope in [$3, $4]" "got '$s'"
}

header projection.tsv "generated	cached_rows	uncached_rows	cached_rows_total	uncached_rows_total	cached_proj_flops_total	uncached_proj_flops_total"
shape projection.tsv 256 7
check "projection: cached projects 1 row a step, uncached n; totals grow, uncached above cached" \
    'if ($2 != 1 || $3 != $1 || $4 != $1 || $5 != $1 * ($1 + 1) / 2 || ($1 > 1 && $5 <= $4) || $7 < $6) why = why " row " $1' \
    projection.tsv
header projection.fits.tsv "series	quantity	x_from	x_to	points	slope	slope_err	prefactor	r2"
slope projection.fits.tsv cached 0.9 1.1
slope projection.fits.tsv uncached 1.9 2.1

header attention-flops.tsv "generated	cached_attn_flops	uncached_attn_flops	cached_attn_flops_total	uncached_attn_flops_total"
shape attention-flops.tsv 256 5
check "attention-flops: totals grow, uncached at or above cached, above from n = 2" \
    'if ($4 <= p4 || $5 <= p5 || $5 < $4 || ($1 > 1 && $5 <= $4) || $3 < $2) why = why " row " $1; p4 = $4; p5 = $5' \
    attention-flops.tsv
slope attention-flops.fits.tsv cached 1.9 2.1
slope attention-flops.fits.tsv uncached 2.9 3.1

header step-time.tsv "position	cached_seconds	uncached_seconds	cached_flops	uncached_flops"
shape step-time.tsv 48 5
check "step-time: positions 0.., times positive, uncached FLOPs grow and stay at or above cached" \
    'if ($1 != NR - 2 || $2 <= 0 || $3 <= 0 || $5 < $4 || $5 < p5) why = why " row " $1; p5 = $5' step-time.tsv

shape memory.tsv 10 8
check "memory: contexts double; every cache grows with context (mistral stops at its window)" \
    'if (p && $1 != 2 * p) why = why " context " $1; for (i = 2; i <= NF; i++) { if ($i < q[i] || (i != 5 && q[i] && $i != 2 * q[i])) why = why " col " i " at " $1; q[i] = $i } p = $1' \
    memory.tsv
check "memory: MQA < GQA < MHA; MLA latent < its decompressed K,V" \
    'if (!($4 < $3 && $3 < $2 && $7 < $6)) why = why " context " $1' memory.tsv
head -n 1 "$A/memory.tsv" | grep -q '^context	llama-2-7b MHA: 32 KV heads' && ok "memory.tsv: header names each cache shape" ||
    bad "memory.tsv: header names each cache shape" "got: $(head -n 1 "$A/memory.tsv" 2>/dev/null)"
shape memory.formats.tsv 6 8
check "memory.formats: f32 > f16 > q8_0 > q4_0 >= int4 = fp4 bytes per token, every shape" \
    'f[NR - 1] = $1; for (i = 2; i <= NF; i++) v[NR - 1, i] = $i; n = NF } END { for (i = 2; i <= n; i++) if (!(v[1,i] > v[2,i] && v[2,i] > v[3,i] && v[3,i] > v[4,i] && v[4,i] >= v[5,i] && v[5,i] == v[6,i])) why = why " col " i' \
    memory.formats.tsv

header bandwidth.tsv "format	bits_per_value	bytes_per_step	flash_seconds	flash_gb_per_s	naive_seconds	naive_gb_per_s	bandwidth_gb_per_s"
shape bandwidth.tsv 6 8
check "bandwidth: formats in order, fewer bytes per step as bits shrink, rates positive" \
    'split("f32 f16 q8_0 q4_0 int4 fp4", want, " "); if ($1 != want[NR - 1] || (NR > 2 && $3 > pb) || $5 <= 0 || $7 <= 0 || $8 <= 0) why = why " " $1; pb = $3' \
    bandwidth.tsv

header quant-error.tsv "format	bits_per_value	k_rms_error	v_rms_error	exact_fraction	attn_error_k_only	attn_error_v_only	attn_error_both	attn_error_both_max"
shape quant-error.tsv 6 9
check "quant-error: f32 exact; error grows f16 < q8_0 < q4_0, and int4, fp4 above q8_0" \
    'e[$1] = $8; x[$1] = $5; k[$1] = $3 } END { if (e["f32"] != 0 || x["f32"] != 1 || k["f32"] != 0) why = "f32 not exact"; if (!(e["f16"] > 0 && e["f16"] < e["q8_0"] && e["q8_0"] < e["q4_0"] && e["q8_0"] < e["int4"] && e["q8_0"] < e["fp4"])) why = why " order"' \
    quant-error.tsv
shape quant-error.hist.tsv 32 8
said=$(awk -F'\t' 'FNR == NR { if (FNR > 1) ex[FNR - 1] = $5; next }
    FNR > 1 { for (i = 3; i <= NF; i++) s[i - 2] += $i }
    END { for (f = 1; f <= 6; f++) { d = s[f] + ex[f] - 1; if (d > 1e-3 || d < -1e-3) why = why " format " f }
          print why ? why : "ok" }' "$A/quant-error.tsv" "$A/quant-error.hist.tsv" 2>&1)
[ "$said" = ok ] && ok "quant-error.hist: each format's shares add up to its inexact values" ||
    bad "quant-error.hist: each format's shares add up to its inexact values" "$said"

# --- gnuplot: kvscope drew every figure; each script renders cleanly --------
if command -v gnuplot >/dev/null 2>&1; then
    figures=$(for gp in plots/*.gp; do basename "$gp" .gp; done)
    missing=""
    for n in $figures; do
        for ext in png svg; do [ -s "$A/$n.$ext" ] || missing="$missing $n.$ext"; done
    done
    [ -z "$missing" ] && ok "plot drew every figure as png and svg" || bad "plot drew every figure as png and svg" \
        "missing:$missing"
    for n in $figures; do
        for term in png svg; do
            gnuplot -c "plots/$n.gp" "$A/$n.tsv" "$plot_tmp/$n.$term" "$term" >"$out" 2>"$err"
            st=$?
            magic=$(head -c 4 "$plot_tmp/$n.$term" 2>/dev/null | od -An -c | tr -d ' ')
            if [ "$st" -eq 0 ] && [ ! -s "$err" ] && { [ "$term" = svg ] && grep -q '</svg>' "$plot_tmp/$n.$term" ||
                [ "$magic" = '211PNG' ]; }
            then ok "plots/$n.gp renders $term (pngcairo for png), gnuplot silent"
            else bad "plots/$n.gp renders $term (pngcairo for png), gnuplot silent" "exit $st, magic '$magic'" \
                "gnuplot stderr: $(head -c 400 "$err")"; fi
        done
    done
    run "plot --term dumb" $KV plot projection --term dumb --out "$plot_tmp/dumb"
    if [ "$status" -eq 0 ] && [ ! -s "$err" ] && grep -q 'slope 1\.000' "$out" && grep -q 'tokens generated' "$out" &&
        [ ! -e "$plot_tmp/dumb/projection.png" ]
    then ok "plot --term dumb draws in the terminal, writes no image"
    else bad "plot --term dumb draws in the terminal, writes no image" "exit $status" \
        "stderr: $(head -c 300 "$err")"; fi
else
    ok "gnuplot is not installed: rendering checks skipped (sudo apt-get install gnuplot-nox)"
fi

# --- without gnuplot: data and scripts, the install hint; same seed, same bytes
B=$plot_tmp/b
run "plot without gnuplot" env PATH=/nonexistent "$KV" plot projection attention-flops memory quant-error \
    --seed 3 --out "$B"
if [ "$status" -eq 0 ] && grep -q 'sudo apt-get install gnuplot-nox' "$out" && [ -s "$B/memory.gp" ] &&
    [ -s "$B/memory.tsv" ] && [ -s "$B/memory.labels.gp" ] && [ ! -e "$B/memory.png" ]
then ok "without gnuplot: data, labels and scripts written, the message says how to install it"
else bad "without gnuplot: data, labels and scripts written, the message says how to install it" "exit $status" \
    "stdout: $(head -c 400 "$out")" "stderr: $(head -c 300 "$err")"; fi
differ=""
for f in projection.tsv projection.fits.tsv attention-flops.tsv attention-flops.fits.tsv memory.tsv \
    memory.formats.tsv quant-error.tsv quant-error.hist.tsv; do
    cmp -s "$A/$f" "$B/$f" || differ="$differ $f"
done
[ -z "$differ" ] && ok "same seed, byte-identical data files (timings aside)" ||
    bad "same seed, byte-identical data files (timings aside)" "differ:$differ"
run "plot another seed" env PATH=/nonexistent "$KV" plot quant-error --seed 4 --out "$plot_tmp/c"
cmp -s "$A/quant-error.tsv" "$plot_tmp/c/quant-error.tsv" && bad "another seed gives other synthetic data" \
    "quant-error.tsv is the same for seeds 3 and 4" || ok "another seed gives other synthetic data"

# --- bad input: one line, exit 2 ---------------------------------------------
: >"$plot_tmp/afile"
expect_fail "plot: unknown figure" 2 "unknown figure 'nope' \(figures: projection, " $KV plot nope --out "$plot_tmp/x"
expect_fail "plot: bad --term" 2 "--term: 'jpeg' is not one of png, svg, dumb" $KV plot memory --term jpeg
expect_fail "plot: --out is a file" 2 "--out .*afile: exists and is not a directory" $KV plot memory --out "$plot_tmp/afile"
expect_fail "plot: --out under a file" 2 "--out .*: cannot create" $KV plot memory --out "$plot_tmp/afile/plots"
expect_fail "plot: a waiting figure" 2 "figure 7 'paged' is waiting for the paged layout" $KV plot paged
expect_fail "plot: nothing named" 2 "name the figures to make, or --all" $KV plot
expect_fail "plot: --tokens beyond the model" 2 "--tokens 300: model 'tiny' holds 256 positions" \
    $KV plot projection --tokens 300 --out "$plot_tmp/x"
expect_fail "plot: unknown option" 2 "unknown or incomplete option '--colour'" $KV plot --colour
rm -rf "$plot_tmp"
unset KVSCOPE_PLOTS
