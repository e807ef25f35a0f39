# test_speculate.sh: `kvscope run --draft --speculate`: greedy speculative
# decoding gives the target's own tokens and says what it cost; caches that
# cannot roll back, and options it does not take, are refused in one line.

expect_ok "run --help names --speculate" '--speculate K' $KV run --help
run "run --speculate 4, tsv" $KV run --model kjv-small --draft kjv-tiny --speculate 4 --tokens 24 --format tsv \
    --prompt "And God said, Let there be light"
if [ "$status" -eq 0 ] && awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
    NR == 2 { ok = $c["same_tokens"] == 1 && $c["generated"] == 24 && $c["k"] == 4 &&
              $c["accepted"] + $c["target_passes"] - 1 == 23 && $c["target_rolled"] == $c["drafted"] - $c["accepted"] &&
              $c["kept_at_1"] >= $c["kept_at_4"] && $c["draft_flops"] > 0 }
    END { exit !ok }' "$out"; then
    ok "run --speculate 4: the target's tokens, each check commits its kept proposals and one more"
else bad "run --speculate 4: the target's tokens, each check commits its kept proposals and one more" "exit $status" \
    "$(head -c 600 "$out")" "$(head -c 300 "$err")"; fi
expect_ok "run --speculate (table) on a paged cache says the tokens are the target's" \
    'same tokens as the target alone: yes' $KV run --model kjv-small --draft kjv-tiny --speculate 2 --tokens 12 --cache paged:page=4
expect_fail "run --speculate with a ring is refused, saying why" 2 "cannot roll back rows: a ring writes new rows over" \
    $KV run --model kjv-small --draft kjv-tiny --speculate 2 --cache ring:window=32
expect_fail "run --speculate with h2o is refused" 2 "cannot roll back rows" \
    $KV run --model kjv-small --draft kjv-tiny --speculate 2 --cache h2o:budget=32,recent=8
expect_fail "run --draft without --speculate is refused" 2 'go together' $KV run --model kjv-small --draft kjv-tiny
expect_ok "run --speculate --temperature samples, and says what its tokens follow" \
    "sampled at temperature 0.7.*|the target's distribution" \
    $KV run --model kjv-small --draft kjv-tiny --speculate 2 --temperature 0.7 --top-k 20 --tokens 12
expect_fail "run --speculate 17 is refused" 2 '1 \.\. 16' $KV run --model kjv-small --draft kjv-tiny --speculate 17
expect_fail "run --speculate on an MLA model is refused" 2 'uses MLA' \
    $KV run --model mla-tiny --draft mla-tiny --speculate 2 --tokens 4
