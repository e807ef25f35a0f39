# test_gguf.sh: `kvscope export --gguf` and `--weights PATH` (GGUF, llama2.c).

gdir=$(mktemp -d)
# same_tokens NAME ARGS_A ARGS_B: `run --prompt "In the beginning" ARGS_A`
# and the same with ARGS_B generate the same tokens (ARGS split at blanks)
same_tokens() {
    run "$1" $KV run --prompt "In the beginning" $2
    st_want=$(grep '^tokens (sequence 0)' "$out")
    run "$1" $KV run --prompt "In the beginning" $3
    st_got=$(grep '^tokens (sequence 0)' "$out")
    if [ "$status" -eq 0 ] && [ -n "$st_want" ] && [ "$st_want" = "$st_got" ]; then ok "$1"
    else bad "$1" "want: $st_want" "got:  $st_got (exit $status)"; fi
}
expect_ok "export: tiny as a GGUF of f32" '^wrote .*21 tensors, matrices in f32' \
    $KV export --model tiny --gguf "$gdir/tiny.gguf"
[ ! -e "$gdir/tiny.gguf.tmp" ] && ok "export: no temporary file left" || bad "export: no temporary file left"
expect_ok "run --weights: the export runs, cached equals uncached" '^tokens identical: yes' \
    $KV run --weights "$gdir/tiny.gguf" --compare
same_tokens "run --weights: the same tokens as the model it came from" "--model tiny --tokens 12" \
    "--weights $gdir/tiny.gguf --tokens 12"
expect_ok "export: from a checkpoint again: the same file" '^wrote ' \
    $KV export --weights "$gdir/tiny.gguf" --gguf "$gdir/again.gguf"
cmp -s "$gdir/tiny.gguf" "$gdir/again.gguf" && ok "export: GGUF -> GGUF is byte-identical" ||
    bad "export: GGUF -> GGUF is byte-identical" "$(cmp "$gdir/tiny.gguf" "$gdir/again.gguf")"
for t in f16 q8_0 q4_0; do
    expect_ok "export: --type $t" "matrices in $t" $KV export --model tiny --gguf "$gdir/tiny-$t.gguf" --type $t
    expect_ok "run --weights: $t runs, cached equals uncached" '^tokens identical: yes' \
        $KV run --weights "$gdir/tiny-$t.gguf" --compare
done
for t in q8_0 q4_0; do
    expect_ok "run --weights --int-dot: $t by integer dots, cached equals uncached" '^tokens identical: yes' \
        $KV run --weights "$gdir/tiny-$t.gguf" --compare --int-dot
    expect_ok "run --weights --int-dot=off: $t exact, cached equals uncached" '^tokens identical: yes' \
        $KV run --weights "$gdir/tiny-$t.gguf" --compare --int-dot=off
    # an f32 cache takes no integer dots: the default's logits are --int-dot's, not --int-dot=off's
    for f in default int off; do
        case $f in default) fl= ;; int) fl=--int-dot ;; off) fl=--int-dot=off ;; esac
        $KV dump --weights "$gdir/tiny-$t.gguf" --tokens 8 $fl --out "$gdir/d-$f" >/dev/null 2>&1
    done
    if [ -s "$gdir/d-default/logits.npy" ] && cmp -s "$gdir/d-default/logits.npy" "$gdir/d-int/logits.npy" &&
        [ -s "$gdir/d-off/logits.npy" ] && ! cmp -s "$gdir/d-default/logits.npy" "$gdir/d-off/logits.npy"
    then ok "dump --weights $t: integer dots by default, --int-dot=off exact"
    else bad "dump --weights $t: integer dots by default, --int-dot=off exact" \
        "$(cmp "$gdir/d-default/logits.npy" "$gdir/d-int/logits.npy"; cmp "$gdir/d-default/logits.npy" "$gdir/d-off/logits.npy")"; fi
    rm -rf "$gdir/d-default" "$gdir/d-int" "$gdir/d-off"
done
expect_ok "bench --decode --weights: says the matrices take integer dots" \
    'q8_0/q4_0 matrices by integer dots against the activation rounded to q8_0' \
    $KV bench --decode --weights "$gdir/tiny-q4_0.gguf" --contexts 16 --steps 1 --reps 1 --pool-mib 8 --quiet
expect_fail "bench --int-dot=ref is refused" 2 "--int-dot alone or --int-dot=off" \
    $KV bench --decode --int-dot=ref --model tiny --contexts 16
expect_fail "run --int-dot=on is refused" 2 "'even'.*'ref'.*'off'" $KV run --model tiny --int-dot=on
expect_ok "bench --decode --int-dot without --weights: the q8_0 cache's keys" \
    "the q8_0 cache's keys .* by integer dots" $KV bench --decode --int-dot --model tiny --contexts 16 --steps 1 --reps 1
expect_ok "calc --weights: the checkpoint's shape" '2 layers, 4 query heads, 2 KV heads, head_dim 16' \
    $KV calc --weights "$gdir/tiny-q4_0.gguf"
expect_ok "eval --weights: names the checkpoint" 'weights: GGUF checkpoint tiny-q8_0.gguf' \
    $KV eval --weights "$gdir/tiny-q8_0.gguf" --set tokenizer=bytes --text README.md --tokens 40

# the tokenizer a file carries: kvscope's byte-level BPE written as 'gpt2'
expect_ok "export: kjv-tiny carries its BPE as llama.cpp's gpt2 vocabulary" \
    "tokenizer kjv-bpe as 'gpt2' \(1024 ids, 768 merges\)" $KV export --model kjv-tiny --gguf "$gdir/kjv.gguf"
head -c 20000 data/text/kjv-valid.txt >"$gdir/held-out.txt"
run "tokenize --weights: the file's vocabulary" $KV tokenize --weights "$gdir/kjv.gguf" --format tsv - <"$gdir/held-out.txt"
got=$(tail -n +2 "$out" | cut -f2)
run "tokenize --model: the model's" $KV tokenize --model kjv-tiny --format tsv - <"$gdir/held-out.txt"
want=$(tail -n +2 "$out" | cut -f2)
if [ "$status" -eq 0 ] && [ -n "$want" ] && [ "$want" = "$got" ]; then ok "tokenize: the GGUF's vocabulary makes the model's ids"
else bad "tokenize: the GGUF's vocabulary makes the model's ids"; fi
# an encoder written apart from kvscope, reading the GGUF as llama.cpp does (gpt-2 pre-tokenizer)
indep=$(python3 tests/cli/gpt2_bpe.py "$gdir/kjv.gguf" "$gdir/held-out.txt")
if [ -n "$want" ] && [ "$indep" = "$want" ]; then ok "gpt2_bpe.py: an independent gpt2 encoder makes the same $(echo "$want" | wc -l) ids"
else bad "gpt2_bpe.py: an independent gpt2 encoder makes the same ids"; fi
same_tokens "run --weights: the GGUF's tokenizer, the model's tokens" "--model kjv-tiny --tokens 12" \
    "--weights $gdir/kjv.gguf --tokens 12"
expect_ok "export: a GGUF's gpt2 vocabulary is written again" "tokenizer of the checkpoint as 'gpt2'" \
    $KV export --weights "$gdir/kjv.gguf" --gguf "$gdir/kjv-again.gguf"
cmp -s "$gdir/kjv.gguf" "$gdir/kjv-again.gguf" && ok "export: a GGUF with a tokenizer -> GGUF is byte-identical" ||
    bad "export: a GGUF with a tokenizer -> GGUF is byte-identical"
expect_ok "export: ids the tokenizer never makes are written unused" "tokenizer bytes as 'gpt2' \(256 ids, 0 merges\)" \
    $KV export --model tiny --set vocab=300 --gguf "$gdir/v300.gguf"
expect_ok "tokenize --weights: the bytes tokenizer of a 300-id model" 'tokenizer checkpoint \(256 ids\)' \
    $KV tokenize --weights "$gdir/v300.gguf" "hi there"
# spm_gguf.py swaps in others
if python3 tests/cli/spm_gguf.py "$gdir/v300.gguf" "$gdir/spm.gguf" llama &&
    python3 tests/cli/spm_gguf.py "$gdir/v300.gguf" "$gdir/gpt2.gguf" gpt2 &&
    python3 tests/cli/spm_gguf.py "$gdir/v300.gguf" "$gdir/bert.gguf" bert; then ok "spm_gguf.py: tokenizers swapped"
else bad "spm_gguf.py: tokenizers swapped"; fi
expect_ok "run --weights: the GGUF's llama tokenizer encodes --prompt (BOS and 3 pieces)" 'prompt: 4 tokens' \
    $KV run --weights "$gdir/spm.gguf" --prompt "In the beginning" --tokens 4
expect_ok "run --weights: the prompt and the generated text printed" \
    '^text \(sequence 0, checkpoint tokens\):  In the beginning ‖' \
    $KV run --weights "$gdir/spm.gguf" --prompt "In the beginning" --tokens 4
expect_ok "run --weights --set tokenizer=bytes: still overrides the file's" 'prompt: 16 tokens' \
    $KV run --weights "$gdir/spm.gguf" --prompt "In the beginning" --set tokenizer=bytes --tokens 2
expect_ok "export: a checkpoint's SentencePiece vocabulary written as 'llama'" \
    "tokenizer of the checkpoint as 'llama' \(300 tokens\)" $KV export --weights "$gdir/spm.gguf" --gguf "$gdir/spm-again.gguf"
same_tokens "export: the vocabulary written again encodes and generates the same" \
    "--weights $gdir/spm.gguf --tokens 6" "--weights $gdir/spm-again.gguf --tokens 6"
$KV export --weights "$gdir/spm-again.gguf" --gguf "$gdir/spm-third.gguf" >/dev/null 2>&1
cmp -s "$gdir/spm-again.gguf" "$gdir/spm-third.gguf" && ok "export: a GGUF with a llama vocabulary -> GGUF is byte-identical" ||
    bad "export: a GGUF with a llama vocabulary -> GGUF is byte-identical"
expect_fail "run --weights: a gpt2 vocabulary without a token for each byte is not read, said in one line" 2 \
    "'gpt2' vocabulary has no token for the byte 0x00.*--prompt-ids" \
    $KV run --weights "$gdir/gpt2.gguf" --prompt "In the beginning"
expect_fail "run --weights: a bert tokenizer is not read, said in one line" 2 \
    "tokenizer model 'bert' is not read .*--prompt-ids" $KV run --weights "$gdir/bert.gguf" --prompt "In the beginning"
expect_ok "run --weights: a gpt2-tokenizer file runs on ids" '^tokens identical: yes' \
    $KV run --weights "$gdir/gpt2.gguf" --prompt-ids 1,2,3 --compare
expect_fail "tokenize --weights: a file whose tokenizer is not read" 2 "runs on ids|its tokens are ids" \
    $KV tokenize --weights "$gdir/bert.gguf" "hi"

head -c $(($(wc -c <"$gdir/tiny.gguf") - 1000)) "$gdir/tiny.gguf" >"$gdir/cut.gguf"
head -c 100 README.md >"$gdir/text.gguf"
printf 'GGUF\004\000\000\000' >"$gdir/v4.gguf"
expect_fail "--weights: a truncated GGUF" 2 'cut.gguf: tensor .* run past the end of the file' \
    $KV run --weights "$gdir/cut.gguf"
expect_fail "--weights: not a checkpoint (the magic decides, not the name)" 2 \
    'text.gguf: neither a GGUF file nor a llama2.c checkpoint' $KV run --weights "$gdir/text.gguf"
expect_fail "--weights: a GGUF version kvscope does not read" 2 'GGUF version 4; kvscope reads versions 2 and 3' \
    $KV view --weights "$gdir/v4.gguf" --headless
expect_fail "--weights: a missing file" 1 'missing.gguf: cannot open' $KV run --weights "$gdir/missing.gguf"
expect_fail "--weights: a directory" 2 'not a regular file' $KV dump --weights "$gdir" --out "$gdir/d"
expect_fail "--weights with --shared" 2 'a checkpoint brings its own layers' \
    $KV run --weights "$gdir/tiny.gguf" --shared
expect_fail "--weights with --set of a tensor size" 2 'the config has d_model 128 but the checkpoint holds 64' \
    $KV run --weights "$gdir/tiny.gguf" --set d_model=128
expect_fail "export: --gguf is required" 2 'export: --gguf OUT is required' $KV export
expect_fail "export: a type GGUF tensors are not" 2 "export: --type 'int4'" \
    $KV export --gguf "$gdir/x.gguf" --type int4
expect_fail "export: an MLA model" 2 'export writes decoder-only GQA models' \
    $KV export --model mla-tiny --gguf "$gdir/x.gguf"
expect_fail "export: a folder that does not exist" 1 'cannot create' \
    $KV export --gguf "$gdir/no/such/dir/x.gguf"
rm -rf "$gdir"
