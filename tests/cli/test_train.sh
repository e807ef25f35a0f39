# test_train.sh: `kvscope train` learns: the validation loss of a small
# model falls by a stated margin in 120 steps; a run stopped and resumed
# ends with the same weights as one that was not; bad input is one line.

tr_tmp=$(mktemp -d)
cat >"$tr_tmp/micro.ini" <<'INI'
[model]
name = micro
d_model = 32
n_layers = 1
n_heads = 2
n_kv_heads = 1
head_dim = 16
ffn_dim = 64
vocab = 1024
max_seq_len = 32
tokenizer = kjv-bpe
INI
cat lessons/0*.md lessons/1[0-3]*.md >"$tr_tmp/train.txt"
cat lessons/14-mla.md lessons/15-encoder-decoder.md >"$tr_tmp/valid.txt"
common="--model $tr_tmp/micro.ini --text $tr_tmp/train.txt --valid $tr_tmp/valid.txt --batch 4 --eval-windows 8"
run "train: 120 steps" $KV train $common --out "$tr_tmp/a.kvw" --steps 120 --eval-every 120 --warmup 10
first=$(sed -n 's/.*valid \([0-9.]*\) nats.*/\1/p' "$out" | head -n 1)
start=$(env KVSCOPE_DATA=data $KV train $common --out "$tr_tmp/z.kvw" --steps 1 --eval-every 1 --lr 1e-9 --warmup 1 |
    sed -n 's/.*valid \([0-9.]*\) nats.*/\1/p')
# the margin: 1 nat per token below where the untrained model starts (about 7.2 = ln 1024 + its noise)
if [ "$status" -eq 0 ] && [ -f "$tr_tmp/a.kvw" ] && [ -f "$tr_tmp/a.kvw.json" ] &&
    awk -v a="$first" -v s="$start" 'BEGIN { exit !(a != "" && s != "" && a < s - 1.0) }'
then ok "train: the validation loss falls by more than 1 nat a token ($start to $first)"
else bad "train: the validation loss falls by more than 1 nat a token" "exit $status, $start -> $first" \
    "$(tail -c 300 "$err")"; fi
# a model with a fixed first token: the trainer's stream is the text alone (the token goes before each
# window), so its count is the tokenizer's less that token, and the sidecar hashes those ids
sed -e 's/^name = micro/name = micro-bos/' -e 's/^vocab = 1024/vocab = 1025\nbos_token = 1024\nadd_bos = true/' \
    "$tr_tmp/micro.ini" >"$tr_tmp/micro-bos.ini"
run "train: a model with a first token" $KV train --model "$tr_tmp/micro-bos.ini" --text "$tr_tmp/train.txt" \
    --valid "$tr_tmp/valid.txt" --batch 2 --eval-windows 2 --out "$tr_tmp/b.kvw" --steps 1 --eval-every 0
said=$($KV tokenize --model "$tr_tmp/micro-bos.ini" --format tsv - <"$tr_tmp/train.txt" | python3 -c '
import json, re, sys
rows = [l.split("\t") for l in sys.stdin.read().splitlines()[1:]]
ids = [int(r[1]) for r in rows if len(r) > 1 and r[0].isdigit()]
run, side = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
h = 1469598103934665603
for x in ids[1:]:
    h = ((h ^ x) * 1099511628211) % 2**64
n = int(re.search(r"text (\d+) tokens", run).group(1))
print("ok" if ids[0] == 1024 and 1024 not in ids[1:] and n == len(ids) - 1 and side["text_fnv1a64"] == "%016x" % h
      else "first %d, %d tokens against %d, hash %s against %016x" % (ids[0], n, len(ids), side["text_fnv1a64"], h))
' "$out" "$tr_tmp/b.kvw.json" 2>&1)
[ "$status" -eq 0 ] && [ "$said" = ok ] && ok "train: an add_bos model trains on the text alone (the tokenizer's ids less the first)" ||
    bad "train: an add_bos model trains on the text alone" "exit $status" "$said" "$(head -c 300 "$err")"
run "train: the trained weights load and run" $KV run --model "$tr_tmp/micro.ini" --set weights="$tr_tmp/a.kvw" \
    --prompt "The cache" --tokens 4 --compare
[ "$status" -eq 0 ] && grep -q 'tokens identical: yes' "$out" && ok "train: the trained weights load and run" ||
    bad "train: the trained weights load and run" "exit $status" "$(head -c 300 "$err")"
# where a run starts is said on its first line: scratch unless --init names weights
run "train: --init FILE" $KV train $common --init "$tr_tmp/a.kvw" --out "$tr_tmp/i.kvw" --steps 2 --eval-every 0
if [ "$status" -eq 0 ] && head -n 1 "$out" | grep -q "^train micro from the weights in $tr_tmp/a.kvw (--init): " &&
    $KV train $common --out "$tr_tmp/s.kvw" --steps 1 --eval-every 0 | head -n 1 | grep -q '^train micro from scratch '
then ok "train: the first line says where the weights start (scratch, or --init FILE)"
else bad "train: the first line says where the weights start (scratch, or --init FILE)" "exit $status" \
    "$(head -n 1 "$out")" "$(head -c 300 "$err")"; fi
expect_fail "train: --init of another shape" 2 "holds a model with d_model = 32; the config says 64" \
    $KV train --model kjv-tiny --text "$tr_tmp/train.txt" --valid "$tr_tmp/valid.txt" --out "$tr_tmp/x.kvw" \
    --init "$tr_tmp/a.kvw"
expect_fail "train: --init of a file that holds no weights" 2 "is not a kvscope weights file" \
    $KV train $common --out "$tr_tmp/x.kvw" --init "$tr_tmp/train.txt"
# --weights reads a .kvw (its tokenizer named in the sidecar): the same tokens as --set weights=FILE
run "run --weights FILE.kvw" $KV run --weights "$tr_tmp/i.kvw" --prompt "The cache" --tokens 6
kvw_tokens=$(grep '^tokens (sequence 0)' "$out")
set_tokens=$($KV run --model "$tr_tmp/micro.ini" --set weights="$tr_tmp/i.kvw" --prompt "The cache" --tokens 6 |
    grep '^tokens (sequence 0)')
if [ "$status" -eq 0 ] && [ -n "$kvw_tokens" ] && [ "$kvw_tokens" = "$set_tokens" ] &&
    grep -q '^model micro: d_model 32, 1 layers' "$out"; then ok "run --weights FILE.kvw: the tokens of --set weights=FILE"
else bad "run --weights FILE.kvw: the tokens of --set weights=FILE" "exit $status" "--weights: $kvw_tokens" \
    "--set weights=: $set_tokens" "$(head -c 300 "$err")"; fi
cp "$tr_tmp/i.kvw" "$tr_tmp/bare.kvw"
expect_fail "run --weights FILE.kvw without its sidecar: text needs a tokenizer" 2 \
    "runs on token ids: no bare.kvw.json names its tokenizer" $KV run --weights "$tr_tmp/bare.kvw" --prompt "The" --tokens 1
expect_ok "run --weights FILE.kvw without its sidecar runs on ids" 'tokens identical: yes' \
    $KV run --weights "$tr_tmp/bare.kvw" --prompt-ids 1,2,3 --tokens 2 --compare
# --threads: the work of a window split by rows, heads and rows of each weight's gradient, never
# inside a sum: the same weights, byte for byte, for 1, 2 and 3 threads
for n in 1 2 3; do
    $KV train $common --out "$tr_tmp/t$n.kvw" --steps 3 --eval-every 0 --threads $n >/dev/null 2>&1
done
if [ -s "$tr_tmp/t1.kvw" ] && cmp -s "$tr_tmp/t1.kvw" "$tr_tmp/t2.kvw" && cmp -s "$tr_tmp/t1.kvw" "$tr_tmp/t3.kvw"
then ok "train --threads 1, 2, 3: the same weights, byte for byte"
else bad "train --threads 1, 2, 3: the same weights, byte for byte" "$(ls -l "$tr_tmp"/t?.kvw 2>&1)"; fi
expect_fail "train: --threads past the pool's limit" 2 "--threads: at most" \
    $KV train $common --out "$tr_tmp/x.kvw" --threads 100000
# 40 steps at once, or 20, a stop, and 20 more from the checkpoint: the same weights
# (and the same --log: one row per step, the resumed run's appended)
$KV train $common --out "$tr_tmp/b.kvw" --steps 40 --eval-every 10 --log "$tr_tmp/b.tsv" >/dev/null 2>&1
$KV train $common --out "$tr_tmp/c.kvw" --steps 20 --eval-every 10 --log "$tr_tmp/c.tsv" >/dev/null 2>&1
run "train: resume" $KV train $common --out "$tr_tmp/c.kvw" --steps 40 --eval-every 10 --resume "$tr_tmp/c.kvw.ckpt" \
    --log "$tr_tmp/c.tsv"
[ "$status" -eq 0 ] && cmp -s "$tr_tmp/b.kvw" "$tr_tmp/c.kvw" && ok "train: stopped at 20 and resumed, the same weights" ||
    bad "train: stopped at 20 and resumed, the same weights" "exit $status" "$(head -c 300 "$err")"
# the log's deterministic columns: step, lr, loss, bits/byte, validation
cut -f1-5 "$tr_tmp/b.tsv" >"$tr_tmp/b5"
cut -f1-5 "$tr_tmp/c.tsv" >"$tr_tmp/c5"
if [ "$(wc -l <"$tr_tmp/b5")" -eq 41 ] && cmp -s "$tr_tmp/b5" "$tr_tmp/c5" &&
    [ "$(awk -F'\t' 'NR > 1 && $5 != "-"' "$tr_tmp/b5" | wc -l)" -eq 4 ]; then
    ok "train: --log has a row per step, validation every 10, the same after a resume"
else
    bad "train: --log has a row per step, validation every 10, the same after a resume" \
        "$(wc -l <"$tr_tmp/b5") rows" "$(diff "$tr_tmp/b5" "$tr_tmp/c5" | head -5)"
fi
expect_fail "train: an unwritable --log" 1 "cannot write" \
    $KV train $common --out "$tr_tmp/x.kvw" --steps 1 --log /nonexistent/dir/x.tsv
expect_fail "train: --text is required" 2 "are required" $KV train --model "$tr_tmp/micro.ini"
expect_fail "train: a missing text says how to make it" 1 "cannot read .*none.txt.*\`make corpus\` makes the training text" \
    $KV train $common --text "$tr_tmp/none.txt" --out "$tr_tmp/x.kvw"
expect_fail "train: a corpus not yet made" 1 "build/corpus/kjv-valid.txt.*\`make corpus\`" \
    $KV train $common --valid "$tr_tmp/build/corpus/kjv-valid.txt" --out "$tr_tmp/x.kvw"
printf 'tiny' >"$tr_tmp/short.txt"
expect_fail "train: a text too short for a window" 2 "one window needs" \
    $KV train --model "$tr_tmp/micro.ini" --text "$tr_tmp/short.txt" --valid "$tr_tmp/valid.txt" --out "$tr_tmp/x.kvw"
expect_fail "train: a model without a tokenizer" 2 "has no tokenizer" \
    $KV train --model worked-example --text "$tr_tmp/train.txt" --valid "$tr_tmp/valid.txt" --out "$tr_tmp/x.kvw"
expect_fail "train: an unwritable output" 1 "cannot write" \
    $KV train $common --out /nonexistent/dir/x.kvw --steps 1 --eval-every 0
expect_fail "train: weights of another shape" 2 "holds a model with d_model = 32; the config says 64" \
    $KV run --model tiny --set vocab=1024 --set weights="$tr_tmp/a.kvw" --tokens 1
printf 'KVSCOPEW' >"$tr_tmp/cut.kvw"
expect_fail "train: a truncated weights file" 2 "header is cut short|version" \
    $KV run --model "$tr_tmp/micro.ini" --set weights="$tr_tmp/cut.kvw" --tokens 1
rm -rf "$tr_tmp"
