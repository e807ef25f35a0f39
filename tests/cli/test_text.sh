# test_text.sh: prompts as text, and generated tokens shown as text.

expect_ok "text prompt: tiny reads bytes, the text comes back" '^text \(sequence 0, bytes tokens\): The cache' \
    $KV run --model tiny --prompt "The cache" --tokens 3
run "text prompt: one token per byte" $KV run --model tiny --prompt "abc" --tokens 2 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tokenizer"] == "bytes"
assert len(d["tokens"][0]) == 2 and len(d["pieces"][0]) == 2
assert d["text"][0] == "".join(d["pieces"][0])
' "$out"; then ok "text prompt: json has ids, pieces and text"
else bad "text prompt: json has ids, pieces and text" "exit $status" "$(head -c 300 "$err")"; fi
expect_ok "text prompt: 5 bytes make a 5-token prompt" 'prompt: 5 tokens' $KV run --model tiny --prompt "hello" --tokens 2
expect_ok "prompt ids still work" 'prompt: 3 tokens x 1 sequence\(s\) \(given \(--prompt-ids\)\)' \
    $KV run --model tiny --prompt-ids 1,2,3 --tokens 2
expect_ok "a trained model's default prompt is held-out text" \
    '^text \(sequence 0, kjv-bpe tokens\): Vanity of vanities, saith the Preacher' $KV run --model kjv-tiny --tokens 2
expect_ok "a trained model's default prompt says where it is from" 'prompt: [0-9]+ tokens x 1 sequence\(s\) \(default text' \
    $KV run --model kjv-tiny --tokens 2
expect_ok "--prompt-len still draws random ids on a trained model" 'prompt: 5 tokens x 1 sequence\(s\) \(random ids' \
    $KV run --model kjv-tiny --prompt-len 5 --tokens 2
expect_ok "a random-weight model's default prompt stays random ids" 'prompt: 8 tokens x 1 sequence\(s\) \(random ids' \
    $KV run --model tiny --tokens 2
expect_fail "text prompt: a model without a tokenizer" 2 "has no tokenizer: its tokens are ids" \
    $KV run --model worked-example --prompt "hi"
expect_fail "text prompt: empty" 2 "the text is empty" $KV run --model tiny --prompt ""
expect_fail "text prompt: not with ids" 2 "exclude each other" $KV run --model tiny --prompt hi --prompt-ids 1,2
expect_fail "text prompt: longer than the context" 2 "needs 301 positions; model 'tiny' has max_seq_len 256" \
    $KV run --model tiny --prompt "$(head -c 300 README.md | tr -d '\000')" --tokens 2
expect_fail "a model naming an unknown tokenizer" 2 "tokenizer 'nope' is not one kvscope knows" \
    $KV run --model tiny --set tokenizer=nope --prompt hi
run "view: the token strip shows text" $KV view --model tiny --prompt "KV cache" --headless --frames last --keys '<right>'
if [ "$status" -eq 0 ] && grep -q 'tokens as text' "$out" && grep -q 'K V ␣ c a c h e' "$out"
then ok "view: the token strip shows text"
else bad "view: the token strip shows text" "exit $status" "$(grep tokens "$out" | head -3)"; fi
