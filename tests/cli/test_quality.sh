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
