# test_mla.sh: multi-head latent attention (MLA) through `kvscope run`.

expect_ok "mla: absorbed, cached equals uncached" '^tokens identical: yes' \
    $KV run --model mla-tiny --tokens 12 --compare
for c in contiguous dynamic paged:page=16; do
    expect_ok "mla: decompress on $c, cached equals uncached" '^tokens identical: yes' \
        $KV run --model mla-tiny --tokens 12 --compare --mla decompress --cache $c
done
expect_ok "mla: the latent cache's bytes per token are memory.h's" \
    '^cached MLA cache: 320 B per token measured \(19 positions held\), memory.h 320 B' \
    $KV run --model mla-tiny --tokens 12
expect_ok "mla: the reduction against the MHA cache is computed" 'decompressed MHA cache: 1280 B, 4\.00x more' \
    $KV run --model mla-tiny --tokens 12
# prompt 8, 12 tokens, 2 layers, one tile per layer: 24 lookups, the 2 of the prefill miss
expect_ok "mla: the tile LRU's hit rate" '^cached MLA tiles: LRU of 4 tiles of 64 positions: 24 lookups, 22 hits, 2 misses \(hit rate 91\.7%\)' \
    $KV run --model mla-tiny --tokens 12 --mla decompress
run "mla: the tile LRU's hit rate repeats" $KV run --model mla-tiny --tokens 12 --mla decompress
grep 'MLA tiles' "$out" >"$out.1"
run "mla: the tile LRU's hit rate repeats" $KV run --model mla-tiny --tokens 12 --mla decompress
grep 'MLA tiles' "$out" >"$out.2"
if [ -s "$out.1" ] && cmp -s "$out.1" "$out.2"; then ok "mla: the tile LRU's hit rate repeats"
else bad "mla: the tile LRU's hit rate repeats" "$(cat "$out.1")" "$(cat "$out.2")"; fi
rm -f "$out.1" "$out.2"
expect_ok "mla: prefetch statistics" '^cached MLA prefetch: [0-9]+ queued, [0-9]+ skipped \(tile held\), [0-9]+ issued' \
    $KV run --model mla-tiny --tokens 4 --cache paged:page=4
expect_ok "mla: json reports path, tiles and prefetch" '"hit_rate": 0\.91' \
    $KV run --model mla-tiny --tokens 12 --mla decompress --format json
expect_ok "mla: the MLA notes preset runs with --shared (576 values, 17.78x)" \
    'memory.h 4608 B \(576 values x 2 layers, f32\); the decompressed MHA cache: 81920 B, 17\.78x more' \
    $KV run --model mla --shared --set n_layers=2 --tokens 2
expect_ok "mla: deepseek-v2-lite --shared runs a few tokens" \
    '^cached MLA cache: 62208 B per token measured .* memory.h 62208 B \(576 values x 27 layers, f32\)' \
    $KV run --model deepseek-v2-lite --shared --prompt-len 4 --tokens 2
expect_fail "mla: --mla on a GQA model" 2 "--mla: model 'tiny' uses GQA attention" $KV run --model tiny --mla absorbed
expect_fail "mla: unknown path" 2 "--mla: 'fast' is not one of absorbed, decompress" \
    $KV run --model mla-tiny --mla fast
expect_fail "mla: pitfalls are GQA's" 2 "--bug: the pitfalls act on GQA attention" \
    $KV run --model mla-tiny --bug rope-position
expect_fail "mla: a model breaking the head_dim convention" 2 "head_dim = qk_nope_dim \+ qk_rope_dim = 24" \
    $KV run --model mla-tiny --set head_dim=32
