# test_calc.sh: `kvscope calc`, the KV cache memory of a model config.
# The figures themselves are checked in tests/unit/test_memory.c; here the
# command's output, formats and errors.

expect_ok "calc --help names the formula" '2 \(K,V\) x n_kv_heads' $KV calc --help
expect_ok "calc default is llama-2-7b, 2 GiB at 4096" 'total +2,147,483,648 B +2\.00 GiB' $KV calc
expect_ok "calc writes the formula out" \
    '2 \(K,V\) x 32 layers x 32 KV heads x 128 head_dim x 2 bytes = 524,288 B' $KV calc --model llama-2-7b
expect_ok "calc llama-3-8b: MHA equivalent 4x" 'GQA stores 4\.00x less' $KV calc --model llama-3-8b
expect_ok "calc glm-mla: latent vs decompressed" '576 values per token per layer instead of 10,240' \
    $KV calc --model glm-mla
expect_ok "calc deepseek-v2-lite reads an MLA config" '\(512 kv_lora_rank \+ 64 qk_rope_dim\) x 2 bytes = 1,152 B' \
    $KV calc --model deepseek-v2-lite
expect_ok "calc mistral-7b: the sliding window bounds the ring" 'sliding window 4,096: .*' \
    $KV calc --model mistral-7b
expect_ok "calc marlin fp4 at 4096: 132 MiB" 'total +138,412,032 B' \
    $KV calc --model marlin-gqa-32l --elem fp4
expect_ok "calc --all-formats: one row per format" '^  fp4 ' $KV calc --model marlin-gqa-32l --all-formats
expect_ok "calc --context --batch" 'total += 524,288 B x 8,192 tokens x 32 sequences' \
    $KV calc --context 8192 --batch 32
expect_ok "calc notes a total beyond memory" 'more than this machine' $KV calc --context 16000000 --batch 64
expect_ok "calc --set applies" '2 \(K,V\) x 2 layers' $KV calc --set n_layers=2
expect_ok "calc tsv header and row" "^llama-3-8b	gqa	32	32	8	128	8192	1	f16	2048	4096	131072	" \
    $KV calc --model llama-3-8b --format tsv
expect_ok "calc --list shows every model" '^glm-mla +MLA +47' $KV calc --list
expect_ok "calc --list tsv" '^llama-2-7b	gqa	32	32	32	128	4096	0	524288	2147483648$' \
    $KV calc --list --format tsv

# the JSON parses, and carries the figures
calc_json=$(mktemp)
for m in llama-2-7b glm-mla; do
    if $KV calc --model "$m" --all-formats --format json >"$calc_json" 2>/dev/null; then
        expect_ok "calc json $m parses" '"bytes_total"' python3 -m json.tool "$calc_json"
    else
        bad "calc json $m" "kvscope calc --model $m --all-formats --format json failed"
    fi
done
$KV calc --list --format json >"$calc_json" 2>/dev/null
expect_ok "calc --list json parses" '"f16_bytes_per_token"' python3 -m json.tool "$calc_json"
$KV calc --model glm-mla --format json >"$calc_json" 2>/dev/null
expect_ok "calc json: glm-mla latent 1,152 B, ratio 17.78" '^1152 17\.78$' python3 -c "
import json, sys
f = json.load(open(sys.argv[1]))['formats'][0]
print(f['bytes_per_token_layer'], '%.2f' % f['reference']['ratio'])" "$calc_json"
# totals above 2^63 stay exact integers in JSON (a double would print 1.8446744073709552e19)
$KV calc --model llama-2-7b --set n_layers=1 --set n_heads=1 --set n_kv_heads=1 --set head_dim=8 --set d_model=8 \
    --elem int4 --context 1537228672809129301 --format json >"$calc_json" 2>/dev/null
expect_ok "calc json: a total above 2^63 is an exact integer" \
    '^18446744073709551612 int 1537228672809129301 int$' python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
t = d['formats'][0]['bytes_total']
print(t, type(t).__name__, d['context'], type(d['context']).__name__)" "$calc_json"
expect_ok "calc json: the exact total is written as digits" '"bytes_total": 18446744073709551612,' \
    cat "$calc_json"
rm -f "$calc_json"

expect_fail "calc unknown model" 2 "unknown model 'nope'" $KV calc --model nope
expect_fail "calc bad context" 2 "--context: 'abc' is not a whole number" $KV calc --context abc
expect_fail "calc zero context" 2 '--context: must be at least 1' $KV calc --context 0
expect_fail "calc zero batch" 2 '--batch: must be at least 1' $KV calc --batch 0
expect_fail "calc unknown elem" 2 "--elem: 'q3' is not one of f32, f16, q8_0, q4_0, int4, fp4" \
    $KV calc --elem q3
expect_fail "calc unknown output format" 2 '--format' $KV calc --format xml
expect_fail "calc unknown option" 2 "unknown option '--bogus'" $KV calc --bogus
expect_fail "calc option without value" 2 "'--context' needs a value" $KV calc --context
expect_fail "calc stray argument" 2 "unexpected argument 'llama'" $KV calc llama
expect_fail "calc --elem with --all-formats" 2 'exclude each other' $KV calc --elem f16 --all-formats
expect_fail "calc too large to count" 2 'too large' $KV calc --context 99999999999999999 --batch 99999999999
