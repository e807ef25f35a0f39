# test_eval.sh: `kvscope eval` scores caches on a text against the exact one.

evtext=$(mktemp)
head -c 800 README.md >"$evtext"
expect_ok "eval: the exact cache is the reference row" '^contiguous .*\(reference\)' \
    $KV eval --text "$evtext" --tokens 120
run "eval: a second exact layout agrees to the bit" $KV eval --text "$evtext" --tokens 120 --cache dynamic --format tsv
if [ "$status" -eq 0 ] && awk -F'\t' 'NR == 2 { ref = $4 } NR == 3 { exit !($4 == ref && $7 == 0 && $8 == 1) }' "$out"
then ok "eval: a second exact layout agrees to the bit"
else bad "eval: a second exact layout agrees to the bit" "exit $status" "$(head -c 400 "$out")"; fi
differ=""
for t in 1 2 3; do
    run "eval --threads $t" $KV eval --text "$evtext" --tokens 120 --threads $t --cache ring:window=16,sinks=2 \
        --cache h2o:budget=24,recent=8 --cache contiguous+quant:k=q4_0,v=q4_0 --per-position --format tsv
    [ "$status" -eq 0 ] || differ="$differ exit-$status"
    cp "$out" "$evtext.$t"
done
cmp -s "$evtext.1" "$evtext.2" && cmp -s "$evtext.1" "$evtext.3" && [ -z "$differ" ] &&
    ok "eval: the same bytes on 1, 2 and 3 threads" ||
    bad "eval: the same bytes on 1, 2 and 3 threads" "$differ" "$(diff "$evtext.1" "$evtext.2" | head -4)"
differ=""
for t in 1 2 3; do # the intervals too: the summary (tsv has no timing) and each segment's scores
    run "eval --threads $t, intervals" $KV eval --text "$evtext" --tokens 160 --threads $t --cache ring:window=16 \
        --cache h2o:budget=24,recent=8 --cache contiguous+quant:k=q4_0,v=q4_0 --paired 2,1 --format tsv
    [ "$status" -eq 0 ] || differ="$differ exit-$status"
    cp "$out" "$evtext.$t"
    run "eval --threads $t, segments" $KV eval --text "$evtext" --tokens 160 --threads $t --cache ring:window=16 \
        --cache h2o:budget=24,recent=8 --cache contiguous+quant:k=q4_0,v=q4_0 --per-segment --format tsv
    [ "$status" -eq 0 ] || differ="$differ exit-$status"
    cat "$out" >>"$evtext.$t"
done
cmp -s "$evtext.1" "$evtext.2" && cmp -s "$evtext.1" "$evtext.3" && [ -z "$differ" ] && grep -q '_lo' "$evtext.1" &&
    ok "eval: the intervals and segments, the same bytes on 1, 2 and 3 threads" ||
    bad "eval: the intervals and segments, the same bytes on 1, 2 and 3 threads" "$differ" \
    "$(diff "$evtext.1" "$evtext.2" | head -4)"
rm -f "$evtext.1" "$evtext.2" "$evtext.3"
run "eval: each interval holds its figure" $KV eval --text "$evtext" --tokens 200 --cache ring:window=16,sinks=2 \
    --cache contiguous+quant:k=q4_0,v=q4_0 --paired 1,2 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
b = d["bootstrap"]
assert b["interval"] == "percentile" and b["level"] == 0.95 and b["segments"] == 32 and b["resamples"] >= 1000
for c in d["caches"]:
    for k in ("bits_per_byte", "kl_nats", "top1_agree"):
        assert c[k + "_lo"] <= c[k] <= c[k + "_hi"], (c["cache"], k)
    assert c["bits_per_byte_lo"] < c["bits_per_byte_hi"]
for p in [c["vs_reference"] for c in d["caches"][1:]] + d["pairs"]:
    for k in ("bits_per_byte", "kl_nats", "top1_agree"):
        x = p[k]
        assert x["lo"] <= x["diff"] <= x["hi"], (p["first"], k, x)
        assert x["side"] == ("same" if x["lo"] <= 0 <= x["hi"] else "lower" if x["hi"] < 0 else "higher")
win, q4 = d["caches"][1], d["caches"][2]
assert d["pairs"][0]["first"] == win["cache"] and d["pairs"][0]["second"] == q4["cache"]
assert abs(d["pairs"][0]["kl_nats"]["diff"] - (win["kl_nats"] - q4["kl_nats"])) < 1e-12
' "$out"; then ok "eval: each interval holds its figure; pairs are the first minus the second"
else bad "eval: each interval holds its figure; pairs are the first minus the second" "exit $status" \
    "$(head -c 400 "$err")"; fi
run "eval: the exact cache against itself" $KV eval --text "$evtext" --tokens 200 --cache dynamic --cache contiguous \
    --paired 2,1 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
for p in [c["vs_reference"] for c in d["caches"][1:]] + d["pairs"]:
    for k in ("bits_per_byte", "kl_nats", "top1_agree"):
        assert p[k]["diff"] == p[k]["lo"] == p[k]["hi"] == 0 and p[k]["side"] == "same", (p, k)
for c in d["caches"]:
    assert c["kl_nats_lo"] == c["kl_nats_hi"] == 0 and c["top1_agree_lo"] == c["top1_agree_hi"] == 1
' "$out" && $KV eval --text "$evtext" --tokens 200 --cache dynamic --quiet |
    grep -Eq '^dynamic +[0-9.]+ \[[0-9.]+, [0-9.]+\] +\+0\.0000 \[\+0\.000, \+0\.000\] same '
then ok "eval: the exact cache against itself: a difference of 0 in an interval of width 0, same"
else bad "eval: the exact cache against itself: a difference of 0 in an interval of width 0, same" "exit $status" \
    "$(head -c 600 "$out")"; fi
# four times the held-out text, about half the width (as 1 / sqrt(predictions)): 32 segments of 12, then of
# 48 predictions, through a window of the trained context (the exact cache drifts past it)
w1=$($KV eval --split validation --tokens 385 --cache ring:window=128 --format json |
    jq '.caches[1] | .bits_per_byte_hi - .bits_per_byte_lo')
w4=$($KV eval --split validation --tokens 1537 --cache ring:window=128 --format json |
    jq '.caches[1] | .bits_per_byte_hi - .bits_per_byte_lo')
awk -v a="$w1" -v b="$w4" 'BEGIN { exit !(a > 0 && b > 0 && b < 0.75 * a) }' &&
    ok "eval: the interval narrows with longer segments ($w1 bits/byte wide, then $w4)" ||
    bad "eval: the interval narrows with longer segments" "width $w1 on 384 predictions, $w4 on 1,536"
run "eval: segments cut the scored text, in order, named by byte offsets" \
    $KV eval --text "$evtext" --prefill 7 --segments 40 --per-segment --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, subprocess, sys
seg = json.load(open(sys.argv[1]))["segments"]
summ = json.loads(subprocess.run(sys.argv[3:] + ["--format", "json"], capture_output=True, check=True).stdout)
size, scored, nbytes = int(sys.argv[2]), summ["caches"][0]["scored"], summ["caches"][0]["bytes"]
assert len(seg) == 40 == len(summ["segments"]) and summ["bootstrap"]["segments"] == 40
assert seg[0]["first_byte"] == size - nbytes and seg[-1]["end_byte"] == size   # the prefill, then the rest
assert seg[0]["first_prediction"] == 0 and sum(s["predictions"] for s in seg) == scored
for a, b in zip(seg, seg[1:]):
    assert a["end_byte"] == b["first_byte"] > a["first_byte"]
    assert b["first_prediction"] == a["first_prediction"] + a["predictions"]
assert max(s["predictions"] for s in seg) - min(s["predictions"] for s in seg) <= 1
assert [(s["first_byte"], s["end_byte"]) for s in seg] == [(s["first_byte"], s["end_byte"]) for s in summ["segments"]]
' "$out" "$(wc -c <"$evtext")" $KV eval --text "$evtext" --prefill 7 --segments 40
then ok "eval: segments cut the scored text, in order, named by byte offsets"
else bad "eval: segments cut the scored text, in order, named by byte offsets" "exit $status" "$(head -c 400 "$err")"; fi
expect_fail "eval: --segments 1" 2 "--segments: 2 to 1024, got 1" $KV eval --text "$evtext" --segments 1
expect_fail "eval: --paired past the caches" 2 "--paired 0,2: row 2 is not a cache here" \
    $KV eval --text "$evtext" --cache dynamic --paired 0,2
expect_fail "eval: --paired a cache with itself" 2 "--paired 1,1: a cache against itself" \
    $KV eval --text "$evtext" --cache dynamic --paired 1,1
expect_fail "eval: --paired, one row" 2 "--paired: want two rows as I,J" $KV eval --text "$evtext" --paired 1
expect_fail "eval: --threads past the most" 2 '--threads: at most 64, got 65' $KV eval --text "$evtext" --threads 65
run "eval: a window forgets: KL above zero, fewer bytes" \
    $KV eval --text "$evtext" --tokens 200 --cache ring:window=16,sinks=2 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
ref, win = d["caches"]
assert ref["reference"] and ref["kl_nats"] == 0 and ref["scored"] == 199
assert win["kl_nats"] > 0 and win["top1_agree"] < 1
assert win["cache_bytes_used"] < ref["cache_bytes_used"]
assert abs(ref["bits_per_byte"] - ref["nll_nats"] / 0.6931471805599453 / ref["bytes"]) < 1e-6
' "$out"; then ok "eval: a window forgets: KL above zero, fewer bytes"
else bad "eval: a window forgets: KL above zero, fewer bytes" "exit $status" "$(head -c 400 "$err")"; fi
run "eval: per position, a row per scored token" \
    $KV eval --text "$evtext" --tokens 50 --prefill 10 --cache contiguous+quant:k=q8_0,v=q8_0 --per-position --format tsv
if [ "$status" -eq 0 ] && [ "$(wc -l <"$out")" -eq 41 ] && head -n 2 "$out" | tail -n 1 | grep -q '^10	'
then ok "eval: per position, a row per scored token"
else bad "eval: per position, a row per scored token" "exit $status, $(wc -l <"$out") lines" "$(head -c 200 "$out")"; fi
run "eval: snapkv keeps its budget after the prompt, then every token" \
    $KV eval --text "$evtext" --tokens 120 --prefill 100 --cache snapkv:budget=16,window=4,pool=3 \
    --cache snapkv:budget=128,window=4 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
ref, snap, whole = json.load(open(sys.argv[1]))["caches"]
assert snap["kl_nats"] > 0 and whole["kl_nats"] < 1e-9
# 119 positions appended; snapkv holds 16 after the prompt of 100, plus the 19 decoded
assert snap["cache_bytes_used"] * 119 == ref["cache_bytes_used"] * 35
assert whole["cache_bytes_used"] == ref["cache_bytes_used"]
' "$out"; then ok "eval: snapkv keeps its budget after the prompt, then every token"
else bad "eval: snapkv keeps its budget after the prompt, then every token" "exit $status" "$(head -c 400 "$err")"; fi
expect_fail "eval: a snapkv window larger than its budget" 2 "cache 'snapkv': window=16 must not exceed budget=8" \
    $KV eval --text "$evtext" --cache snapkv:budget=8,window=16
run "eval: past the model's context, the text sets the positions" \
    $KV eval --text README.md --tokens 300 --set max_seq_len=64 --cache ring:window=32 --cache ring:window=32,sinks=4
scored_bytes=$($KV eval --text README.md --tokens 300 --set max_seq_len=64 --cache ring:window=32 --format json |
    python3 -c 'import json, sys; c = json.load(sys.stdin)["caches"]; print("%.0f" % c[0]["bytes"])')
if [ "$status" -eq 0 ] && grep -q "^read 300 tokens: a prefill of 1 token, then one per step; scored 299 tokens ($scored_bytes bytes) per cache" "$out" &&
    [ "$scored_bytes" -lt "$(wc -c <README.md)" ] &&
    grep -Eq '^contiguous .* 299  past the trained context$' "$out" && grep -Eq '^ring:window=32 .* 32$' "$out" &&
    grep -Eq '^ring:window=32,sinks=4 .* 299  past the trained context$' "$out" &&
    grep -q "^past the trained context: model kjv-tiny learnt 64 positions" "$out" &&
    grep -Eq '^ring:window=32 .* -0\.[0-9]+ \[-[0-9.]+, -[0-9.]+\] better ' "$out"
then ok "eval: the bytes scored, and which caches reach past the trained context"
else bad "eval: the bytes scored, and which caches reach past the trained context" "exit $status, $scored_bytes bytes" \
    "$(head -c 1200 "$out")" "$(head -c 200 "$err")"; fi
expect_ok "eval: a cache within the trained context is not marked" '^contiguous .* 120$' \
    $KV eval --text "$evtext" --tokens 121
run "eval: shift runs past the context in its 64 rows" \
    $KV eval --text README.md --tokens 300 --set max_seq_len=64 --cache shift:ctx=64,keep=4 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
ref, sh = json.load(open(sys.argv[1]))["caches"]
assert sh["scored"] == 299 and sh["kl_nats"] > 0
# the reference holds the 299 positions fed; shift at most 64 of them, at least (64 + 4) / 2
assert 34 * ref["cache_bytes_used"] <= sh["cache_bytes_used"] * 299 <= 64 * ref["cache_bytes_used"]
' "$out"; then ok "eval: shift runs past the context in its 64 rows"
else bad "eval: shift runs past the context in its 64 rows" "exit $status" "$(head -c 400 "$err")"; fi
expect_fail "eval: a shift that keeps its whole context" 2 "cache 'shift': keep=64 leaves nothing to discard in ctx=64" \
    $KV eval --text "$evtext" --set max_seq_len=64 --cache shift:ctx=64,keep=64
: >"$evtext.empty"
printf 'ab\000cd' >"$evtext.bin"
expect_fail "eval: --text is required" 2 "--text FILE or --split validation is required" $KV eval
expect_fail "eval: a missing file" 1 "cannot read" $KV eval --text "$evtext.missing"
expect_fail "eval: an empty file" 2 "is empty" $KV eval --text "$evtext.empty"
expect_fail "eval: a binary file" 2 "is not text: a NUL byte at offset 2" $KV eval --text "$evtext.bin"
expect_fail "eval: --tokens beyond the text" 2 "holds only [0-9]+ tokens" $KV eval --text "$evtext" --tokens 401
expect_fail "eval: nothing left after the prefill" 2 "nothing to score" $KV eval --text "$evtext" --tokens 8 --prefill 8
expect_fail "eval: a bad cache" 2 "unknown cache 'nope'" $KV eval --text "$evtext" --cache nope
expect_fail "eval: a model without a tokenizer" 2 "has no tokenizer: it cannot read text" \
    $KV eval --model worked-example --text "$evtext"
expect_fail "eval: not an encoder-decoder" 2 "encoder-decoder" $KV eval --model encdec --text "$evtext"
# --split validation: the held-out books, shipped; the same bytes make corpus checks
want=$(awk '$2 == "kjv-valid.txt" { print $1 }' data/corpus.sha256)
got=$(sha256sum data/text/kjv-valid.txt | cut -d' ' -f1)
[ -n "$want" ] && [ "$got" = "$want" ] && ok "data/text/kjv-valid.txt is the held-out text data/corpus.sha256 records" ||
    bad "data/text/kjv-valid.txt is the held-out text data/corpus.sha256 records" "sha256 $got, want $want"
a=$($KV eval --model kjv-tiny --split validation --tokens 300 --format json | jq -r '.caches[0].bits_per_byte')
b=$($KV eval --model kjv-tiny --text data/text/kjv-valid.txt --tokens 300 --format json | jq -r '.caches[0].bits_per_byte')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "eval --split validation scores the shipped held-out text ($a bits/byte)" ||
    bad "eval --split validation scores the shipped held-out text" "split: $a, text: $b"
expect_fail "eval: an unknown split" 2 "'validation' is the one split" $KV eval --split train
expect_fail "eval: --split and --text" 2 "exclude each other" $KV eval --split validation --text "$evtext"

# --reference: another cache as row 0 scores the same as that cache in a row of its own
a=$($KV eval --text "$evtext" --tokens 150 --cache shift:ctx=64,keep=2 --format json | jq -r '.caches[1].bits_per_byte')
b=$($KV eval --text "$evtext" --tokens 150 --reference shift:ctx=64,keep=2 --format json |
    jq -r 'if .caches[0].reference then .caches[0].bits_per_byte else "not the reference" end')
[ -n "$a" ] && [ "$a" = "$b" ] && ok "eval --reference: a shift cache as row 0 scores as it does in row 1 ($a)" ||
    bad "eval --reference: a shift cache as row 0 scores as it does in row 1" "row 1: $a, reference: $b"
expect_ok "eval --reference: the table compares against it" 'vs reference, bits/byte' \
    $KV eval --text "$evtext" --tokens 100 --reference ring:window=16 --cache ring:window=32
expect_fail "eval --reference: a bad spec" 2 "unknown cache 'nope'" $KV eval --text "$evtext" --reference nope
# recompute: no cache but the window run again every S steps (its unit test checks each prediction
# against the uncached run of its window); a window as long as the text is the exact cache itself
run "eval: recompute rows" $KV eval --text "$evtext" --tokens 200 --cache recompute:window=200,stride=16 \
    --cache recompute:window=64,stride=16 --format tsv
if [ "$status" -eq 0 ] && awk -F'\t' 'NR == 2 { ref = $4 } NR == 3 { ok = $4 == ref && $7 == 0 && $11 == 199 }
    NR == 4 { ok = ok && $4 != ref && $7 > 0 && $11 == 64 } END { exit !(ok && NR == 4) }' "$out"
then ok "eval: recompute, as long as the text, is the exact cache; a window of 64 reaches 64 rows"
else bad "eval: recompute, as long as the text, is the exact cache; a window of 64 reaches 64 rows" "exit $status" \
    "$(head -c 400 "$out")"; fi
expect_fail "eval: recompute, a stride as long as the window" 2 "the stride must be below the window" \
    $KV eval --text "$evtext" --cache recompute:window=16,stride=16
expect_fail "eval: recompute, a window past the positions" 2 "a window past the model's" \
    $KV eval --text "$evtext" --tokens 100 --cache recompute:window=4096
expect_fail "eval: recompute takes no modifier" 2 "takes no modifier" \
    $KV eval --text "$evtext" --cache recompute+quant:k=q8_0
# --attention-stats: where each head's attention goes, from windows read from position 0
run "eval --attention-stats" $KV eval --model kjv-tiny --split validation --attention-stats --windows 3 --window-len 64 \
    --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
heads = d["heads"]
assert len(heads) == 2 * 4 and d["first_token"] == -1, (len(heads), d["first_token"])  # kjv-tiny: 2 layers, 4 heads
assert d["queries_per_head"] == 3 * 63, d["queries_per_head"]
assert d["sink_heads"] == sum(h["first"] > 0.3 for h in heads)
assert all(0 <= h["first"] <= 1 and 0.05 <= h["top"] <= 1 + 1e-6 for h in heads)
even = sum(1 / (t + 1) for t in range(1, 64)) / 63  # a head spreading evenly over what it sees
assert abs(d["even_first"] - even) < 1e-9, (d["even_first"], even)
' "$out"; then ok "eval --attention-stats: every head, sinks counted, the even baseline"
else bad "eval --attention-stats: every head, sinks counted, the even baseline" "exit $status" "$(head -c 300 "$out")"; fi
run "eval --attention-stats, a fixed first token" $KV eval --model kjv-base --set weights=synthetic --set n_layers=1 \
    --set d_model=48 --set ffn_dim=64 --set head_dim=8 --split validation --attention-stats --windows 2 \
    --window-len 32 --format json
[ "$status" -eq 0 ] && [ "$(jq -r .first_token "$out")" = 1024 ] &&
    ok "eval --attention-stats: kjv-base's windows start with its first token, 1024" ||
    bad "eval --attention-stats: kjv-base's windows start with its first token, 1024" "exit $status" "$(head -c 300 "$out")"
expect_fail "eval --attention-stats: no caches with it" 2 "measures the model, not caches" \
    $KV eval --split validation --attention-stats --cache ring:window=16
expect_fail "eval: --windows without --attention-stats" 2 "go with --attention-stats" $KV eval --split validation --windows 2
expect_fail "eval --attention-stats: --windows 0" 2 "at least 1" $KV eval --split validation --attention-stats --windows 0
expect_fail "eval --attention-stats: a window past the context" 2 "reads 2 to 128" \
    $KV eval --split validation --attention-stats --window-len 129
rm -f "$evtext" "$evtext.empty" "$evtext.bin"
