# test_gguf.sh: `kvscope export --gguf` and `--weights PATH` (GGUF, llama2.c).

gdir=$(mktemp -d)
expect_ok "export: tiny as a GGUF of f32" '^wrote .*21 tensors, matrices in f32' \
    $KV export --model tiny --gguf "$gdir/tiny.gguf"
[ ! -e "$gdir/tiny.gguf.tmp" ] && ok "export: no temporary file left" || bad "export: no temporary file left"
expect_ok "run --weights: the export runs, cached equals uncached" '^tokens identical: yes' \
    $KV run --weights "$gdir/tiny.gguf" --compare
run "run --weights: the same tokens as the model it came from" $KV run --model tiny --tokens 12
want=$(grep '^tokens (sequence 0)' "$out")
run "run --weights: the same tokens as the model it came from" $KV run --weights "$gdir/tiny.gguf" --tokens 12
got=$(grep '^tokens (sequence 0)' "$out")
if [ "$status" -eq 0 ] && [ -n "$want" ] && [ "$want" = "$got" ]; then ok "run --weights: the same tokens as the model it came from"
else bad "run --weights: the same tokens as the model it came from" "want: $want" "got:  $got (exit $status)"; fi
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
done
expect_ok "bench --decode --int-dot without --weights: the q8_0 cache's keys" \
    "the q8_0 cache's keys .* by integer dots" $KV bench --decode --int-dot --model tiny --contexts 16 --steps 1 --reps 1
expect_ok "calc --weights: the checkpoint's shape" '2 layers, 4 query heads, 2 KV heads, head_dim 16' \
    $KV calc --weights "$gdir/tiny-q4_0.gguf"
expect_ok "eval --weights: names the checkpoint" 'weights: GGUF checkpoint tiny-q8_0.gguf' \
    $KV eval --weights "$gdir/tiny-q8_0.gguf" --set tokenizer=bytes --text README.md --tokens 40

# the tokenizer a file carries: spm_gguf.py adds one to an export (which writes none)
expect_ok "export: tiny with 300 ids, room for a vocabulary" '^wrote ' \
    $KV export --model tiny --set vocab=300 --gguf "$gdir/v300.gguf"
if python3 tests/cli/spm_gguf.py "$gdir/v300.gguf" "$gdir/spm.gguf" llama &&
    python3 tests/cli/spm_gguf.py "$gdir/v300.gguf" "$gdir/gpt2.gguf" gpt2; then ok "spm_gguf.py: tokenizers added"
else bad "spm_gguf.py: tokenizers added"; fi
expect_ok "run --weights: the GGUF's llama tokenizer encodes --prompt (BOS and 3 pieces)" 'prompt: 4 tokens' \
    $KV run --weights "$gdir/spm.gguf" --prompt "In the beginning" --tokens 4
expect_ok "run --weights: the prompt and the generated text printed" \
    '^text \(sequence 0, checkpoint tokens\):  In the beginning ‖' \
    $KV run --weights "$gdir/spm.gguf" --prompt "In the beginning" --tokens 4
expect_ok "run --weights --set tokenizer=bytes: still overrides the file's" 'prompt: 16 tokens' \
    $KV run --weights "$gdir/spm.gguf" --prompt "In the beginning" --set tokenizer=bytes --tokens 2
expect_fail "run --weights: a gpt2 tokenizer is not read, said in one line" 2 \
    "tokenizer model 'gpt2' is not read .*--prompt-ids" $KV run --weights "$gdir/gpt2.gguf" --prompt "In the beginning"
expect_ok "run --weights: a gpt2-tokenizer file runs on ids" '^tokens identical: yes' \
    $KV run --weights "$gdir/gpt2.gguf" --prompt-ids 1,2,3 --compare

head -c 1000 "$gdir/tiny.gguf" >"$gdir/cut.gguf"
head -c 100 README.md >"$gdir/text.gguf"
printf 'GGUF\004\000\000\000' >"$gdir/v4.gguf"
expect_fail "--weights: a truncated GGUF" 2 'cut.gguf: tensor .* cannot fit in the file' \
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
