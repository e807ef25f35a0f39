# test_paged.sh: the paged cache through `kvscope run`, as a user sees it.

P=$(seq -s, 1 40)
expect_ok "paged: equal to uncached" '^tokens identical: yes' $KV run --cache paged:page=16 --tokens 6 --compare
expect_ok "paged: page size 1" '^tokens identical: yes' $KV run --cache paged:page=1 --tokens 6 --compare
expect_ok "paged: two prompts with a 40-token common prefix share 2 full pages" \
    'pages: 4 used of .*2 shared, 2 prefix hits' $KV run --cache paged:page=16 --prompt-ids "$P;$P" --tokens 4
expect_ok "paged: json reports the pool" '"prefix_hits": 2' \
    $KV run --cache paged:page=16 --prompt-ids "$P;$P" --tokens 4 --format json
expect_ok "paged+quant" '^tokens identical' $KV run --cache paged:page=8+quant:k=q8_0,v=q8_0 --tokens 4 --compare
run "paged: an exhausted pool is one clear error" $KV run --cache paged:page=16,pages=3 --prompt-len 40 --tokens 20
if [ "$status" -eq 1 ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q 'page pool exhausted: all 3 pages' "$err"
then ok "paged: an exhausted pool is one clear error"
else bad "paged: an exhausted pool is one clear error" "exit $status" "$(cat "$err")"; fi
expect_fail "paged: bad page size" 2 "option page: must be at least 1" $KV run --cache paged:page=0
expect_fail "paged: unknown option" 2 "has no option 'size'" $KV run --cache paged:size=4
expect_ok "block-sparse: drops old pages past the threshold" 'block-sparse: on; [0-9]+ pages attended, [0-9]+ dropped' \
    $KV run --cache paged:page=8+sparse:threshold=32,keep=0.5 --prompt-len 60 --tokens 8
expect_ok "block-sparse: quality loses attention mass" 'least mass kept 0\.' \
    $KV run --cache paged:page=8+sparse:threshold=32,keep=0.5 --prompt-len 60 --tokens 8 --quality
expect_fail "block-sparse only on paged" 2 "takes no modifier '\+sparse'" $KV run --cache contiguous+sparse:keep=0.5
