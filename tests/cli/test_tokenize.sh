# test_tokenize.sh: `kvscope tokenize`, the shipped merges, and learning them.

expect_ok "tokenize: a verse, token by token" 'kjv-bpe \(1024 ids\): 54 bytes in 17 tokens' \
    $KV tokenize "And God said, Let there be light: and there was light."
expect_ok "tokenize: spaces shown inside pieces" '␣God' $KV tokenize "And God said"
run "tokenize: --ids gives the text back" $KV tokenize --ids 295,385,391 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert "".join(p["piece"] for p in d["pieces"]).replace("\u2423", " ") == "And God said", d
' "$out"; then ok "tokenize: --ids gives the text back"
else bad "tokenize: --ids gives the text back" "exit $status" "$(head -c 300 "$out")"; fi
expect_ok "tokenize: bytes, one token a byte" 'bytes \(256 ids\): 3 bytes in 3 tokens' $KV tokenize --tokenizer bytes abc
expect_ok "tokenize: stdin" 'in 1 tokens' sh -c "printf ' God' | $KV tokenize -"
expect_ok "tokenize: a model's tokenizer" 'bytes \(256 ids\)' $KV tokenize --model tiny hi
expect_ok "tokenize: an empty text is no ids (as llama.cpp)" "0 bytes in 0 tokens" $KV tokenize ""
expect_fail "tokenize: no text" 2 "one TEXT" $KV tokenize
expect_fail "tokenize: an id beyond the vocabulary" 2 "1024 is outside tokenizer 'kjv-bpe''s ids 0..1023" \
    $KV tokenize --ids 1,1024
expect_fail "tokenize: a bad id list" 2 "not a comma-separated list" $KV tokenize --ids 1,,2
expect_fail "tokenize: an unknown tokenizer" 2 "tokenizer 'nope' is not one kvscope knows" $KV tokenize --tokenizer nope x
expect_fail "tokenize: a model without one" 2 "has no tokenizer" $KV tokenize --model worked-example x
bpe_tmp=$(mktemp -d)
printf 'kvscope-bpe 1\nvocab 300\n97 98\n' >"$bpe_tmp/short.txt"
expect_fail "tokenize: a truncated merges file" 2 "line 4: the file ends after 1 of 44 merges" \
    $KV tokenize --tokenizer "$bpe_tmp/short.txt" x
expect_fail "tokenize --learn: needs its options" 2 "needs --text FILE, --vocab N and --out FILE" $KV tokenize --learn
# learning: the training text of this repository's README, small and always there
expect_ok "tokenize --learn: a BPE from a text" 'learnt 200 merges' \
    $KV tokenize --learn --text README.md --vocab 456 --out "$bpe_tmp/readme.txt"
run "tokenize --learn: the same text twice, the same merges" \
    $KV tokenize --learn --text README.md --vocab 456 --out "$bpe_tmp/again.txt"
cmp -s "$bpe_tmp/readme.txt" "$bpe_tmp/again.txt" && ok "tokenize --learn: the same text twice, the same merges" ||
    bad "tokenize --learn: the same text twice, the same merges" "the files differ"
expect_fail "tokenize --learn: an unwritable place" 1 "cannot write" \
    $KV tokenize --learn --text README.md --vocab 300 --out /nonexistent/dir/m.txt
rm -rf "$bpe_tmp"
# the whole corpus round-trips (when `make corpus` has made it)
if [ -f build/corpus/kjv-train.txt ]; then
    for part in train valid; do
        run "tokenize: the corpus round-trips" $KV tokenize --format tsv - <build/corpus/kjv-$part.txt
        back=$(tail -n +2 "$out" | cut -f4 | tr -d '\n' | sed 's/␣/ /g; s/\\n/\n/g' |
            cmp -s - build/corpus/kjv-$part.txt && echo same)
        [ "$status" -eq 0 ] && [ "$back" = same ] && ok "tokenize: the $part text round-trips" ||
            bad "tokenize: the $part text round-trips" "exit $status"
    done
else
    echo "  skip  tokenize: the corpus round trip (run \`make corpus\` first)"
fi

# a GGUF of a vocabulary alone, its byte tokens not in byte order (as
# GPT-2's and Llama 3's are): the general "gpt2" reader, contractions apart
vdir=$(mktemp -d)
python3 tests/cli/vocab_gguf.py "$vdir/v.gguf"
expect_ok "tokenize --weights: a GGUF of a vocabulary alone, ids not in byte order" '^258,223,150,139,259$' \
    sh -c "$KV tokenize --weights $vdir/v.gguf --format tsv \" the it's\" | awk -F'\t' 'NR > 1 { printf \"%s%s\", s, \$2; s = \",\" } END { print \"\" }'"
rm -rf "$vdir"
# a model whose sequences all start with a fixed first token (add_bos): it comes first, its piece empty
expect_ok "tokenize --model kjv-base: the first token 1024, then the text's" '^1024	0	$' \
    sh -c "$KV tokenize --model kjv-base --format tsv 'In the beginning' | sed -n 2p | cut -f2-4"
expect_fail "a first token that stands for text" 2 "id 65 stands for text" \
    $KV eval --model kjv-base --set bos_token=65 --set weights=synthetic --text README.md --tokens 20
# its GGUF export says so (add_bos_token, the first token as <|endoftext|>), and reads back the same
bos_dir=$(mktemp -d)
bos_set="--set weights=synthetic --set n_layers=1 --set d_model=64 --set ffn_dim=64 --set head_dim=16 --set n_heads=4 --set n_kv_heads=2"
run "export kjv-base's shape" $KV export --model kjv-base $bos_set --gguf "$bos_dir/b.gguf"
expect_ok "tokenize --weights: an export of kjv-base puts its first token first" '^1024	0	$' \
    sh -c "$KV tokenize --weights $bos_dir/b.gguf --format tsv 'In the beginning' | sed -n 2p | cut -f2-4"
a=$($KV eval --model kjv-base $bos_set --split validation --tokens 120 --format json | jq -r '.caches[0].bits_per_byte')
b=$($KV eval --weights "$bos_dir/b.gguf" --split validation --tokens 120 --format json | jq -r '.caches[0].bits_per_byte')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "eval: kjv-base and its GGUF export score the same bytes ($a bits/byte)" ||
    bad "eval: kjv-base and its GGUF export score the same bytes" "model: $a, export: $b"
rm -rf "$bos_dir"
