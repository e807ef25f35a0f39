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

# view --draft --speculate: the same run recorded, one event a step (each
# draft token, the check, the roll-back). Checked against `run`'s own counts
# for the same prompt: the record has drafted + 2 x checks steps; at its end
# the counts line gives back as many rows as run rolled back; each roll-back
# frame crosses out as many target rows as its line says it gave back
vp="And God said, Let there be light"
run "run --speculate 3, tsv (for the view's counts)" $KV run --model kjv-small --draft kjv-tiny --speculate 3 \
    --tokens 20 --format tsv --prompt "$vp"
want=$(awk -F'\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i }
    NR == 2 { print $c["drafted"] + 2 * ($c["target_passes"] - 1), $c["target_rolled"], $c["draft_rolled"] }' "$out")
set -- $want
run "view --speculate 3: every step" $KV view --model kjv-small --draft kjv-tiny --speculate 3 --tokens 20 \
    --prompt "$vp" --headless --size 100x30 --keys "$(printf '<space> %.0s' $(seq 1 "${1:-1}"))"
if [ "$status" -eq 0 ] && grep -q "paused  *$1/$1 steps" "$out" &&
    tail -n 8 "$out" | grep -q "rows given back: target $2, draft $3;" &&
    grep -q 'generation complete: 20 tokens' "$out"
then ok "view --speculate: $1 steps, the rows given back are run's ($2 target, $3 draft)"
else bad "view --speculate: $1 steps, the rows given back are run's ($2 target, $3 draft)" "exit $status" \
    "$(grep -E 'steps|given back|complete' "$out" | tail -n 4)" "$(head -c 300 "$err")"; fi
said=$(awk '/^--- frame/ { want = -1 }
    /refused rows given back: target/ { s = $0; sub(/.*given back: target /, "", s); want = s + 0; n++ }
    want >= 0 && /^[^a-z]*x*$/ && /[█▲]/ { x = $0; c = gsub(/x/, "", x); if (c != want) why = why " frame " NR ": " c " x, said " want; want = -1 }
    END { if (n < 3) why = why " only " n " roll-backs"; print why ? why : "ok" }' "$out")
[ "$said" = ok ] && ok "view --speculate: each roll-back crosses out the target rows it says it gave back" ||
    bad "view --speculate: each roll-back crosses out the target rows it says it gave back" "$said"
expect_fail "view --draft without --speculate is refused" 2 'go together' \
    $KV view --model kjv-small --draft kjv-tiny --headless
expect_fail "view --speculate with a ring is refused, saying why" 2 'cannot roll back rows' \
    $KV view --model kjv-small --draft kjv-tiny --speculate 2 --cache ring:window=32 --headless
expect_fail "view --speculate with --serve is refused" 2 'drop --serve' \
    $KV view --model kjv-small --draft kjv-tiny --speculate 2 --serve --headless
