# test_sink.sh: learnt attention sinks (attn_sink = learned) from the command
# line: the trainer learns them, the same bytes on 1 and 2 threads; the file
# carries them (a model without them writes none); cached and uncached runs
# agree; eval --attention-stats reports their mass; every combination that
# cannot hold them says so in one line.

sk_tmp=$(mktemp -d)
for sink in learned none; do
    cat >"$sk_tmp/$sink.ini" <<INI
[model]
name = micro-$sink
d_model = 32
n_layers = 2
n_heads = 2
n_kv_heads = 1
head_dim = 16
ffn_dim = 64
vocab = 1024
max_seq_len = 32
tokenizer = kjv-bpe
attn_sink = $sink
INI
done
cat lessons/0*.md >"$sk_tmp/train.txt"
cat lessons/14-mla.md >"$sk_tmp/valid.txt"
sk_common="--text $sk_tmp/train.txt --valid $sk_tmp/valid.txt --batch 4 --eval-windows 4 --steps 20 --eval-every 0"
for n in 1 2; do
    $KV train --model "$sk_tmp/learned.ini" $sk_common --out "$sk_tmp/t$n.kvw" --threads $n >/dev/null 2>&1
done
$KV train --model "$sk_tmp/none.ini" $sk_common --out "$sk_tmp/plain.kvw" >/dev/null 2>&1
if [ -s "$sk_tmp/t1.kvw" ] && cmp -s "$sk_tmp/t1.kvw" "$sk_tmp/t2.kvw"
then ok "sink: train --threads 1 and 2 give the same weights, byte for byte"
else bad "sink: train --threads 1 and 2 give the same weights, byte for byte" "$(ls -l "$sk_tmp"/t?.kvw 2>&1)"; fi
# the sink logits start at 0 and move; a model without sinks writes no such tensor
$KV dump --weights "$sk_tmp/t1.kvw" --out "$sk_tmp/dump" --prompt-ids 1,2 --tokens 1 >/dev/null 2>&1
moved=$(python3 - "$sk_tmp/dump" <<'PY'
import struct, sys
vals = []
for layer in (0, 1):
    raw = open(f"{sys.argv[1]}/layer{layer}.attn_sink.npy", "rb").read()
    start = 10 + struct.unpack("<H", raw[8:10])[0]  # npy 1.0: magic, version, header length, header
    vals += struct.unpack("<2f", raw[start:start + 8])
print(sum(v != 0.0 for v in vals))
PY
)
if [ "$moved" = 4 ] && grep -q 'layer1.attn_sink' "$sk_tmp/t1.kvw" && ! grep -q 'attn_sink' "$sk_tmp/plain.kvw"
then ok "sink: each head's sink logit moved from 0 in training; a model without sinks writes none"
else bad "sink: each head's sink logit moved from 0 in training; a model without sinks writes none" \
    "sinks moved: $moved of 4"; fi
expect_ok "sink: run --weights FILE finds the sinks; cached and uncached agree" 'tokens identical: yes' \
    $KV run --weights "$sk_tmp/t1.kvw" --prompt "The cache" --tokens 6 --compare --attention flash --cache paged:page=8
if [ "$($KV run --weights "$sk_tmp/t1.kvw" --prompt "The" --tokens 4 | grep '^tokens (sequence 0)')" = \
      "$($KV run --model "$sk_tmp/learned.ini" --set weights="$sk_tmp/t1.kvw" --prompt "The" --tokens 4 |
         grep '^tokens (sequence 0)')" ]
then ok "sink: --weights FILE and --model with the key give the same tokens"
else bad "sink: --weights FILE and --model with the key give the same tokens"; fi
run "sink: eval --attention-stats" $KV eval --weights "$sk_tmp/t1.kvw" --attention-stats --text "$sk_tmp/valid.txt" \
    --format tsv
# the learnt sink's mass and the keys' (position 0 among them) never pass 1
if [ "$status" -eq 0 ] && head -n 1 "$out" | grep -q 'learned_sink$' &&
    awk -F'\t' 'NR > 1 { n++; if (!($7 > 0 && $7 < 1 && $3 + $7 <= 1.000001)) bad = 1 } END { exit bad || n != 4 }' "$out" &&
    $KV eval --weights "$sk_tmp/t1.kvw" --attention-stats --text "$sk_tmp/valid.txt" | grep -q '^learnt sink: it takes ' &&
    ! $KV eval --weights "$sk_tmp/plain.kvw" --attention-stats --text "$sk_tmp/valid.txt" | grep -q 'learn'
then ok "sink: eval --attention-stats gives each head's learnt sink mass beside position 0's"
else bad "sink: eval --attention-stats gives each head's learnt sink mass beside position 0's" "exit $status" \
    "$(head -c 400 "$out")" "$(head -c 300 "$err")"; fi
expect_fail "sink: export --gguf refuses a learnt-sink model" 2 "learnt attention sinks; GGUF's llama architecture" \
    $KV export --weights "$sk_tmp/t1.kvw" --gguf "$sk_tmp/x.gguf"
$KV export --weights "$sk_tmp/plain.kvw" --gguf "$sk_tmp/plain.gguf" >/dev/null 2>&1
expect_fail "sink: a GGUF checkpoint has no sinks to read" 2 "hold no attention sink logits" \
    $KV run --weights "$sk_tmp/plain.gguf" --set attn_sink=learned --prompt-ids 1,2 --tokens 1
expect_fail "sink: a weights file without them" 2 "has no tensor 'layer0.attn_sink'" \
    $KV run --model "$sk_tmp/learned.ini" --set weights="$sk_tmp/plain.kvw" --prompt "The" --tokens 1
expect_fail "sink: a weights file with them, a config without" 2 "holds learnt attention sinks; model 'micro-none' says attn_sink = none" \
    $KV run --model "$sk_tmp/none.ini" --set weights="$sk_tmp/t1.kvw" --prompt "The" --tokens 1
expect_fail "sink: MLA" 2 "attn_sink = learned applies to a decoder with GQA/MHA attention, not MLA" \
    $KV run --model mla-tiny --set attn_sink=learned --tokens 1
expect_fail "sink: an encoder-decoder" 2 "attn_sink = learned applies to a decoder .*not an encoder-decoder" \
    $KV run --model encdec --set attn_sink=learned --beams 2 --tokens 1
expect_fail "sink: a bad value" 2 "attn_sink: 'maybe' is not one of none, learned" \
    $KV run --model tiny --set attn_sink=maybe --tokens 1
rm -rf "$sk_tmp"
