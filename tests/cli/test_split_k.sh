# test_split_k.sh: split-K decode attention as the user meets it: `bench
# --split-k` measures flash on one thread against split-K on two and checks
# the two agree; its bad combinations are refused in one line. Timings are
# never checked: the machine may be shared.

expect_ok "bench --help names --split-k" '--split-k' $KV bench --help
run "bench --split-k --quick --format tsv" $KV bench --split-k --quick --format tsv
if [ "$status" -eq 0 ] && head -n 1 "$out" | grep -q '^context	format	kv_bytes	seconds_1_thread	seconds_2_threads	speedup	rms_diff_vs_flash'; then
    ok "bench --split-k --quick --format tsv exits 0 with its header"
else bad "bench --split-k --quick --format tsv exits 0 with its header" "exit $status" "$(head -c 300 "$out")" "$(head -c 300 "$err")"; fi
rows=$(awk -F'\t' 'NR > 1 && $1 == 1024 && $4 > 0 && $5 > 0 && $7 <= 1e-6 { n++ } END { print n + 0 }' "$out")
[ "$rows" -eq 3 ] && ok "bench --split-k: f16, q8_0, q4_0 timed on 1 and 2 threads, split within 1e-6 of flash" ||
    bad "bench --split-k: f16, q8_0, q4_0 timed on 1 and 2 threads, split within 1e-6 of flash" "$(cat "$out")"
expect_ok "bench --split-k --quick's table says what it merged" 'log-sum-exp' $KV bench --split-k --quick
expect_fail "bench --split-k --decode is refused" 2 'split-k' $KV bench --split-k --decode

# the view's line for a decode step says when its attention was split
split_view() {
    $KV view --screen sim --model tiny --set max_seq_len=1024 --prompt-len 600 --tokens 2 --attention flash \
        --headless --size 200x30 --keys '<space> <space>' --frames last "$@" 2>&1 | grep '^Step 1 decode'
}
line=$(split_view --threads 2)
echo "$line" | grep -q 'split-K: 2 parts a head on the threads, merged by log-sum-exp' &&
    ok "view --threads 2: the decode step's line says its attention was split in 2 and merged" ||
    bad "view --threads 2: the decode step's line says its attention was split in 2 and merged" "$line"
line=$(split_view --threads 1)
[ -n "$line" ] && ! echo "$line" | grep -q 'split-K' && ok "view --threads 1: no split-K on the line" ||
    bad "view --threads 1: no split-K on the line" "$line"
expect_fail "view --threads past the pool's limit is refused" 2 'threads' $KV view --threads 65 --headless --keys ' '
