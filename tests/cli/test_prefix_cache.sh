# test_prefix_cache.sh: `kvscope serve --prefix-cache block|radix` on the chat
# and few-shot workloads, the hits of one conversation against what the two
# caches' rules give, and bad input refused in one line.

# One conversation of 3 turns, messages of L tokens, outputs of O, pages of
# P, pool and budget roomy: turn t + 1's prompt is turn t's prompt, its O
# tokens and a new message. The tree holds every row turn t held (its
# prompt and output but the last token, never fed); the block hash names
# only the full pages a prompt pass filled, those wholly inside turn t's
# prompt (one pass each: the budget holds a whole prompt).
L=10 O=6 P=8
p1=$L p2=$((L + O + L)) p3=$((2 * (L + O) + L))
want_prompt=$((p1 + p2 + p3))
want_radix=$((p1 + O - 1 + p2 + O - 1))
want_block=$((p1 / P * P + p2 / P * P))
for c in radix block; do
    [ "$c" = radix ] && want=$want_radix || want=$want_block
    expect_ok "serve --prefix-cache $c --workload chat: one conversation's hits as the $c rules give ($want of $want_prompt)" \
        "^prefix cache $c: $want of $want_prompt prompt tokens found cached, not run" \
        $KV serve --model tiny --workload chat --turns 3 --requests 3 --prompt-len $L --output-len $O \
        --prefix-cache $c --cache paged:page=$P,pages=40 --token-budget 64 --quiet
done

# both caches on both workloads, under a pool that makes the tree evict: the
# table, and the summary's hit rate equal to its own counts
for w in chat fewshot; do
    for c in block radix; do
        expect_ok "serve --prefix-cache $c --workload $w: the table and the summary" \
            "^prefix cache $c: [0-9]+ of [0-9]+ prompt tokens found cached" \
            $KV serve --model tiny --workload $w --prefix-cache $c --requests 16 --rate 1 --prompt-len 6..16 \
            --output-len 4..10 --turns 3 --cache paged:page=8,pages=24 --slots 4 --quiet
        if grep -q "^ *step  *running" "$out" && grep -q "^16 requests in [0-9]* steps" "$out"; then
            ok "serve $c $w: a row per step and every request done"
        else bad "serve $c $w: a row per step and every request done" "$(head -c 400 "$out")"; fi
    done
done
expect_ok "serve --prefix-cache radix --format json: hit rate, pages held, evictions" '"prefix_cache": "radix"' \
    $KV serve --model tiny --workload chat --prefix-cache radix --requests 16 --rate 1 --prompt-len 6..16 \
    --output-len 4..10 --turns 3 --cache paged:page=8,pages=24 --slots 4 --format json --quiet
said=$(python3 -c 'import json,sys; s = json.load(open(sys.argv[1]))["summary"]
ok = s["prefix_hit_tokens"] > 0 and abs(s["prefix_hit_rate"] - s["prefix_hit_tokens"] / s["prompt_tokens"]) < 1e-9
ok = ok and s["prefix_evicted_pages"] > 0 and 0 < s["prefix_pages_held"] <= s["pool_pages"] and s["tree_nodes"] > 0
print("ok" if ok else s)' "$out")
[ "$said" = ok ] && ok "serve --format json: radix hits, its rate, evictions under a small pool, pages held" ||
    bad "serve --format json: radix hits, its rate, evictions under a small pool, pages held" "$said"
expect_ok "serve --format tsv: the prefix cache's columns" 'prefix_pages	prefix_evicted	tree_nodes$' \
    $KV serve --model tiny --workload fewshot --prefix-cache radix --requests 6 --cache paged:page=8,pages=40 \
    --format tsv --quiet

expect_fail "serve: an unknown --prefix-cache" 2 "--prefix-cache: 'lru' is not pages, block or radix" \
    $KV serve --prefix-cache lru
expect_fail "serve: an unknown --workload" 2 "--workload: 'agents' is not random, chat or fewshot" \
    $KV serve --workload agents
expect_fail "serve: a chat of 0 turns" 2 'turns: must be at least 1' \
    $KV serve --model tiny --workload chat --turns 0
expect_fail "serve: few-shot whose preamble and question outgrow the model" 2 'the longest request needs [0-9]+ positions' \
    $KV serve --model tiny --workload fewshot --shared-prefix 200 --prompt-len 60
expect_fail "serve: a chat too long for the model" 2 'the longest request needs [0-9]+ positions' \
    $KV serve --model tiny --workload chat --turns 8 --prompt-len 40
expect_fail "serve: a workload and a trace" 2 'not both' \
    $KV serve --workload chat --trace /dev/null
expect_fail "serve: radix over a block-sparse pool" 2 'prefix cache keeps pages that \+sparse' \
    $KV serve --model tiny --prefix-cache radix --cache paged:page=8,pages=40+sparse:threshold=64,keep=0.5
expect_fail "view: --workload without --serve" 2 'are for --serve' $KV view --workload chat --headless
