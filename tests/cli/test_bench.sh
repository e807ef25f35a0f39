# test_bench.sh: `kvscope bench` in its quick form: it runs, says what it
# measured, and refuses bad input in one line. Timings are never checked:
# the machine may be shared.

expect_ok "bench --help says what is measured" 'read bandwidth' $KV bench --help
expect_ok "bench is listed in kvscope --help" '^  bench ' $KV --help

bench_state=$(mktemp -d)
run "bench --quick" env XDG_STATE_HOME="$bench_state" $KV bench --quick
if [ "$status" -eq 0 ]; then ok "bench --quick exits 0"; else bad "bench --quick exits 0" "exit $status" \
    "stderr: $(head -c 300 "$err")"; fi
# its tiny sizes say nothing of the machine: no roofs kept for the view and run
grep -q "^roofs: not kept for the view and run (--quick's figures" "$out" && [ ! -e "$bench_state/kvscope/roofs" ] &&
    ok "bench --quick keeps no roofs, and says so" || bad "bench --quick keeps no roofs, and says so" \
    "$(grep roofs "$out")" "$(ls -R "$bench_state")"
rm -rf "$bench_state"
grep -Eq '^read bandwidth: [0-9]+\.[0-9]+ GB/s \(best of [0-9]+ loops: (scalar|avx2|avx512) 8-acc [1248]-stream( prefetch)?; its 3 rounds [0-9.]+ to [0-9.]+ GB/s\)$' "$out" &&
    ok "bench --quick prints the bandwidth line, naming the loop that won" ||
    bad "bench --quick prints the bandwidth line, naming the loop that won" "stdout: $(grep -A1 '^read bandwidth' "$out")"
loops=$(sed -n 's/^read bandwidth: .*best of \([0-9]*\) loops.*/\1/p' "$out")
listed=$(grep -Ec '^  (scalar|avx2|avx512) 8-acc ' "$out")
[ -n "$loops" ] && [ "$loops" -ge 4 ] && [ "$loops" -eq "$listed" ] && ok "bench --quick lists each read loop it took the best of" ||
    bad "bench --quick lists each read loop it took the best of" "best of '$loops', listed $listed"
# a figure past the bandwidth by more than 5% is no percentage: ">100%" and a note naming it
high=$(grep -Eo '(^| )[0-9]+%' "$out" | tr -d ' %' | awk '$1 > 105' | head -3 | tr '\n' ' ')
[ -z "$high" ] && ok "bench --quick prints no percentage of the bandwidth above 105%" ||
    bad "bench --quick prints no percentage of the bandwidth above 105%" "found: $high"
if grep -q '>100%' "$out"; then
    grep -Eq '^note: .* read at [0-9]+\.[0-9]+x the read bandwidth|^note: [0-9]+ warm figure\(s\) over' "$out" &&
        ok "bench --quick: a >100% figure has its note" ||
        bad "bench --quick: a >100% figure has its note" "$(grep -n '>100%\|^note' "$out" | head -5)"
else ok "bench --quick: a >100% figure has its note (none was over)"; fi
missing=""
for f in f32 f16 q8_0 q4_0 int4 fp4; do
    grep -Eq "^ +[0-9]+  $f " "$out" || missing="$missing $f"
done
[ -z "$missing" ] && ok "bench --quick has a row for every format" ||
    bad "bench --quick has a row for every format" "missing:$missing"
missing=""
for form in flash naive materialize; do
    for cache in cold warm; do
        grep -q "^$form, $cache:" "$out" || missing="$missing $form/$cache"
    done
done
[ -z "$missing" ] && ok "bench --quick has every form, cold and warm" ||
    bad "bench --quick has every form, cold and warm" "missing:$missing"
grep -q '^== 3. matvec' "$out" && grep -Eq '^GSL CBLAS' "$out" &&
    grep -Eq '^OpenBLAS' "$out" && ok "bench --quick compares the matvec with GSL and OpenBLAS (or says it is absent)" ||
    bad "bench --quick compares the matvec with GSL and OpenBLAS (or says it is absent)" \
        "stdout: $(sed -n '/== 3/,$p' "$out" | head -c 400)"
grep -q 'WRONG' "$out" && bad "bench --quick: no result differs from the reference" "$(grep WRONG "$out" | head -3)" ||
    ok "bench --quick: no result differs from the reference"
# progress: nothing while stderr is a file (as above); on a terminal (script(1), 80 columns) one line drawn
# again in place, with the sections done of all, the time left (once one is done) and the section running;
# --quiet removes it
cr=$(printf '\r')
! grep -q "section\|round\|$cr" "$err" && ok "bench --quick: no progress when stderr is not a terminal" ||
    bad "bench --quick: no progress when stderr is not a terminal" "stderr: $(head -c 300 "$err")"
if command -v script >/dev/null 2>&1; then
    timeout 120 script -qec "stty cols 80 rows 24; $KV bench --quick >/dev/null" /dev/null </dev/null >"$out" 2>&1
    status=$?
    if [ "$status" -eq 0 ] && tr '\r' '\n' <"$out" |
        grep -Eq '^kvscope bench: section [0-9]+ of 12, [0-9.]+ s(, about [0-9.]+ s left)?; round [1-3] of 3, '
    then ok "bench --quick on a terminal: sections done of all, the time (and the time left), the section running"
    else bad "bench --quick on a terminal: sections done of all, the time (and the time left), the section running" \
        "exit $status" \
        "terminal: $(tr '\r' '\n' <"$out" | head -c 400)"; fi
    timeout 120 script -qec "stty cols 80 rows 24; $KV bench --quick --quiet >/dev/null" /dev/null </dev/null >"$out" 2>&1
    status=$?
    [ "$status" -eq 0 ] && ! grep -q 'section\|round\|left' "$out" && ok "bench --quick --quiet on a terminal: no progress" ||
        bad "bench --quick --quiet on a terminal: no progress" "exit $status" "terminal: $(head -c 300 "$out")"
else bad "script(1) (bsdutils) is needed for the progress line test"; fi

# the summary: the longest context (however the list is ordered), each format's G4/G1 as the flash, cold
# table has it, and its floor recomputed from the printed times: the warm G = 4 step at the context the
# footnote names, scaled to the summary's rows, over the cold G = 1 step (or "-" where none was cached)
run "bench summary" $KV bench --quick --contexts 2048,256 --reps 1
bad_rows=$(awk '
    function sec_of(u) { return u == "us" ? 1e-6 : u == "ms" ? 1e-3 : 1 }
    /^flash, (cold|warm):/ { sec = $2; sub(":", "", sec); next }
    /^summary: flash, cold, context / { L = $5; sec = "sum"; next }
    /^  its floor: the G = 4 warm step at context / { W = $11 }
    /^$/ { sec = "" }
    (sec == "cold" || sec == "warm") && /^ +[0-9]+  [a-z0-9_]+ / {
        t1[sec, $1, $2] = $5 * sec_of($6); t4[sec, $1, $2] = $10 * sec_of($11); r[sec, $1, $2] = $15 }
    sec == "sum" && /^  [a-z0-9_]+ +[0-9.]+ (us|ms|s) / { n++; f[n] = $1; g[n] = $7; fl[n] = $8 }
    END {
        bad = 0
        if (L != 2048 || n != 6) { print "summary context " L ", " n " rows"; exit }
        for (i = 1; i <= n; i++) {
            if (g[i] != r["cold", L, f[i]]) { print f[i] " G4/G1 " g[i] " vs table " r["cold", L, f[i]]; bad++ }
            if (W == "") { if (fl[i] != "-") { print f[i] " floor " fl[i] " without a cached context"; bad++ }; continue }
            want = t4["warm", W, f[i]] * L / W / t1["cold", L, f[i]]; got = fl[i] + 0; d = got - want
            if (d < 0) d = -d
            if (!(want > 0 && d <= 0.01 + 0.02 * want)) { print f[i] " floor " fl[i] " vs " want; bad++ }
        }
        if (!bad) print "none"
    }' "$out")
[ "$status" -eq 0 ] && [ "$bad_rows" = "none" ] &&
    ok "bench summary: the longest context, G4/G1 as its table has it, the floor from the warm and cold times" ||
    bad "bench summary: the longest context, G4/G1 as its table has it, the floor from the warm and cold times" \
        "exit $status: $bad_rows" "$(sed -n '/^summary/,$p' "$out" | head -12)"

run "bench tsv" $KV bench --quick --format tsv --contexts 64,128 --reps 1
head -n 1 "$out" | grep -q '^section	isa	impl	form	group	cache	size	format	seconds	' &&
    ok "bench tsv has its header row" || bad "bench tsv has its header row" "first line: $(head -n 1 "$out")"
# a bandwidth row per read loop (at least the 4 scalar ones) and the dot kernel's; 2 contexts x 6 formats
# x 2 groups x 3 forms x 2 caches; 3 or 4 matvec rows
rows=$(tail -n +2 "$out" | wc -l)
bw=$(grep -c '^bandwidth	' "$out")
attn=$(grep -c '^attention	' "$out")
cols=$(awk -F'\t' '{ print NF }' "$out" | sort -u | tr '\n' ' ')
if [ "$status" -eq 0 ] && [ "$bw" -ge 5 ] && [ "$attn" -eq 144 ] && [ "$rows" -ge $((bw + 147)) ] && [ "$cols" = "20 " ]
then ok "bench tsv: one row per measurement, every row 20 columns"
else bad "bench tsv: one row per measurement, every row 20 columns" \
    "exit $status, bandwidth rows $bw, attention rows $attn, rows $rows, column counts: $cols"; fi

# f32_seconds: the f32 time each attention row's speedup_vs_f32 divides (cold: f32's steps in turn with the
# row's, so not the f32 row's time), "-" on the other sections; within 1%: --quick's microsecond times
# have four or five digits at nanoseconds, and the ratio three decimals
mismatch=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
    $1 == "attention" { r = $c["f32_seconds"] / $c["seconds"]; v = $c["speedup_vs_f32"]; d = r - v;
                        if (d < 0) d = -d
                        if (d > 0.0006 + 0.01 * v) n++ }
    $1 != "attention" && $c["f32_seconds"] != "-" { n++ } END { print n + 0 }' "$out")
[ "$mismatch" -eq 0 ] && ok "bench tsv: speedup_vs_f32 is f32_seconds over seconds" ||
    bad "bench tsv: speedup_vs_f32 is f32_seconds over seconds" "$mismatch rows disagree"

expect_fail "bench: unknown isa" 2 "unknown ISA 'sse9'" $KV bench --quick --isa sse9
expect_fail "bench: --reps 0" 2 "--reps: must be at least 1, got 0" $KV bench --quick --reps 0
expect_fail "bench: bad contexts list" 2 "--contexts: 'x' is not a whole number" $KV bench --quick --contexts 1024,x
expect_fail "bench: contexts list ending in a comma" 2 "ends with a comma" $KV bench --quick --contexts 1024,
expect_fail "bench: empty contexts entry" 2 "not a comma-separated list" $KV bench --quick --contexts 1,,2
expect_fail "bench: zero context" 2 "--contexts: must be at least 1" $KV bench --quick --contexts 0
expect_fail "bench: json is not offered" 2 "table or tsv" $KV bench --quick --format json
expect_fail "bench: unknown option" 2 "unknown or incomplete option '--fast'" $KV bench --fast
expect_fail "bench: stray argument" 2 "unexpected argument 'now'" $KV bench now

# --int-dot: q8_0, q4_0, int4 and fp4 keys by integer dots, checked against a reference with the same rounding
run "bench --int-dot" $KV bench --quick --int-dot --format tsv
int_rows=$(awk -F'\t' '$1 == "attention" && $3 == "kvscope-int-dot"' "$out" | wc -l)
other=$(awk -F'\t' '$1 == "attention" && $3 == "kvscope-int-dot" && $8 != "q8_0" && $8 != "q4_0" && $8 != "int4" && $8 != "fp4"' "$out" | wc -l)
if [ "$status" -eq 0 ] && [ "$int_rows" -eq 96 ] && [ "$other" -eq 0 ] && ! grep -q WRONG "$out"; then
    ok "bench --int-dot: the 96 q8_0, q4_0, int4 and fp4 attention rows marked, none wrong"
else bad "bench --int-dot" "want: exit 0, 96 rows kvscope-int-dot, all q8_0/q4_0/int4/fp4" \
    "got: exit $status, $int_rows rows, $other of other formats" "stderr: $(head -c 300 "$err")"; fi
expect_ok "bench --int-dot: the table says what it changes" 'q8_0, q4_0, int4 and fp4 keys are scored by integer dots' \
    $KV bench --quick --int-dot
