# test_structure.sh: attention structure (--structure) on the command line.

expect_ok "structure: named in the header" \
    'attention structure: sink \+4 on position 0; heavy hitters \+3 at 10,20,30' \
    $KV run --prompt-len 40 --tokens 2 --structure sink,heavy
expect_ok "structure: exact cache still equals uncached" 'tokens identical: yes' \
    $KV run --model small --prompt-len 40 --tokens 6 --structure sink,local,heavy,retrieval --compare
expect_ok "structure: a window without sinks loses the needle" 'greedy tokens first differ at step 0' \
    $KV run --model small --prompt-len 40 --tokens 4 --chunk 8 --structure retrieval \
    --cache ring:window=16,pass=8 --quality
expect_ok "structure: sinks keep the needle" 'greedy tokens never differ in 4 steps' \
    $KV run --model small --prompt-len 40 --tokens 4 --chunk 8 --structure retrieval \
    --cache ring:window=16,sinks=4,pass=8 --quality
run "structure: json names it" $KV run --prompt-len 20 --tokens 2 --structure retrieval --quality \
    --cache ring:window=8 --format json
if [ "$status" -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["structure"].startswith("retrieval +8 to the needle at 1")' "$out"
then ok "structure: json names it"; else bad "structure: json names it" "exit $status" "$(head -c 300 "$out")"; fi
expect_fail "structure: unknown item" 2 "unknown item 'bogus'" $KV run --structure sink,bogus
expect_fail "structure: bad number" 2 "--structure sink: 'x' is not" $KV run --structure sink=x
expect_fail "structure: needle after the question" 2 "must come before the question" \
    $KV run --prompt-len 8 --structure retrieval,needle=7
expect_fail "structure: not for MLA" 2 "decoder-only models with standard attention" \
    $KV run --model mla-tiny --structure sink
expect_fail "structure: not for encoder-decoder" 2 "decoder-only models" $KV run --model encdec --structure sink
