# test_bench_decode.sh: `kvscope bench --decode`, a whole model's step against its byte limit.

run "bench --decode, quick" $KV bench --decode --quick --format tsv
rows=$(grep -c '^decode	' "$out")
if [ "$status" -eq 0 ] && [ "$rows" -eq 2 ] && grep -q '^bandwidth	' "$out" &&
    awk -F'\t' '$1 == "decode" && !($9 > 0 && $12 > 0) { exit 1 }' "$out"
then ok "bench --decode, quick: an f16 and a q8_0 row, each with a time and bytes"
else bad "bench --decode, quick: an f16 and a q8_0 row, each with a time and bytes" "exit $status, $rows rows" \
    "$(head -c 300 "$err")"; fi
expect_ok "bench --decode: the table names the byte limit" 'byte limit' $KV bench --decode --quick --contexts 32
expect_fail "bench: --model without --decode" 2 "go with --decode" $KV bench --quick --model tiny
expect_fail "bench --decode: --steps 0" 2 "--steps: must be at least 1" $KV bench --decode --quick --steps 0
expect_fail "bench --decode: --steps 65" 2 "at most 64" $KV bench --decode --quick --steps 65
expect_fail "bench --decode: an encoder-decoder" 2 "encoder-decoder" \
    $KV bench --decode --quick --model encdec
