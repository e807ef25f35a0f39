# test_quality.sh: lossy caches measured against the exact shadow.

expect_ok "quality: an exact cache keeps all the mass" 'least mass kept 1.0000' \
    $KV run --tokens 4 --cache contiguous --quality
expect_ok "quality: an exact cache never differs" 'greedy tokens never differ in 4 steps' \
    $KV run --tokens 4 --cache contiguous --quality --attention naive
expect_ok "quality: a window drops attention mass" 'least mass kept 0\.' \
    $KV run --prompt-len 40 --tokens 4 --cache ring:window=8,sinks=2 --quality
expect_ok "quality: q4_0 keeps all the mass" 'least mass kept 1\.0000' \
    $KV run --prompt-len 20 --tokens 4 --cache contiguous+quant:k=q4_0,v=q4_0 --quality
expect_ok "quality: mixed precision, tsv per layer" '^step	context	layer	attn_rel_err' \
    $KV run --prompt-len 40 --tokens 4 --cache mixed:hot=16,group=8 --quality --format tsv
run "quality: json parses" $KV run --prompt-len 20 --tokens 3 --cache mixed --quality --format json
if [ "$status" -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["steps"]) == 3' "$out"
then ok "quality: json parses"; else bad "quality: json parses" "exit $status" "$(head -c 300 "$err")"; fi
expect_fail "quality: not with --compare" 2 "excludes --no-cache and --compare" $KV run --quality --compare
expect_fail "quality: one sequence" 2 "measures one sequence" $KV run --quality --batch 2
expect_ok "h2o: a budget above the sequence keeps all the mass" 'least mass kept 1\.0000' \
    $KV run --prompt-len 20 --tokens 4 --cache h2o:budget=64,recent=8 --quality
expect_ok "h2o: a small budget drops attention mass" 'least mass kept 0\.' \
    $KV run --prompt-len 60 --tokens 6 --cache h2o:budget=16,recent=4,pass=16 --quality
expect_fail "h2o: recent above budget" 2 "recent=8 must not exceed budget=4" $KV run --cache h2o:budget=4,recent=8
# the exact run's sink and look-back measures: on 1,2,3,1,2,3 the queries at
# positions 3, 4 and 5 had an earlier copy (1/4, 1/5 and 1/6 of an even
# spread fall after it); the first query sees only position 0
run "quality: sink and look-back measures" $KV run --model tiny --prompt-ids 1,2,3,1,2,3 --tokens 1 --quality --format json
if [ "$status" -eq 0 ] && jq -e '.summary | .lookback_queries == 3 and ((.lookback_even - (1/4 + 1/5 + 1/6) / 3) | fabs) < 1e-12
        and .lookback_top > 0 and .lookback_top <= 1 and .first_mass_top >= .first_mass and .first_mass > 0
        and ((.first_mass_even - 1/6) | fabs) < 1e-12' "$out" >/dev/null; then
    ok "quality: the look-back measure counts the repeated queries, the even shares are 1 / context"
else
    bad "quality: the look-back measure counts the repeated queries, the even shares are 1 / context" "exit $status" \
        "$(jq -c .summary "$out" 2>&1 | head -c 400)"
fi
