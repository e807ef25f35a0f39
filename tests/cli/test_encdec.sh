# test_encdec.sh: the encoder-decoder of the encoder-decoder notes and beam search through
# `kvscope run`, as a user drives them.

expect_ok "encdec: run --help explains --beams" '--beams W' $KV run --help
expect_ok "encdec: beam search of width 4" '^hypotheses, cached' $KV run --model encdec --beams 4
expect_ok "encdec: the cross cache is computed once for every beam" \
    'computed 1 time\(s\) \(600 memory rows projected\), read by up to 4 beams' $KV run --model encdec --beams 4
expect_ok "encdec: the encoder-decoder notes' self cache per beam, recomputed" \
    'self-attention +4 layers x 8 heads x 20 tokens x 32 x 4 B x 2 = 163840 B' $KV run --model encdec --beams 4
expect_ok "encdec: the encoder-decoder notes' cross cache per beam, recomputed" \
    'cross-attention +4 layers x 8 heads x 150 tokens x 32 x 4 B x 2 = 1228800 B \(1.23 MB' $KV run --model encdec --beams 4
expect_ok "encdec: 8 beams: 11.14 MB exactly, the notes' 11.2 MB from rounding" \
    '8 beams .*11141120 B \(11.14 MB\); 8 x the rounded 1.4 MB gives 11.2 MB' $KV run --model encdec --beams 4
expect_ok "encdec: one shared cross cache for 4 beams" \
    '4 x 163840 \+ 1228800 = 1884160 B' $KV run --model encdec --beams 4
expect_ok "encdec: contiguous forks copy rows" 'copies: [1-9][0-9]* forks, .* B copied \(contiguous: every fork' \
    $KV run --model encdec --beams 4
expect_ok "encdec: paged forks share pages, copy on first write" \
    'copies: [1-9][0-9]* forks share their pages \(nothing copied at the fork\), [0-9]+ drops; [1-9][0-9]* page\(s\) copied on first write' \
    $KV run --model encdec --beams 4 --cache paged:page=16
expect_ok "encdec: paged, every page back at the end" 'pages: 0 used of 8' \
    $KV run --model encdec --beams 4 --cache paged:page=16

run "encdec: paged steps show shared pages and copies (json)" $KV run --model encdec --beams 4 --cache paged:page=16 --format json
if [ "$status" -eq 0 ] && python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d["steps"]
assert max(x["pages_shared"] for x in s) > 0, "no shared page"
assert sum(x["cow_copies"] for x in s) > 0, "no copy on write"
assert sum(x["forks"] for x in s) > 0, "no fork"
assert all(0 < x["counters"]["bytes_copied"] <= x["cow_copies"] * 131072 or x["cow_copies"] == x["counters"]["bytes_copied"] == 0 for x in s), "only copy-on-write pages copy, and never more than a page each"
assert d["measured"]["cross_fills"] == 1 and d["measured"]["cross_refs_end"] == 0
assert d["memory"]["seed_width_total"] == 11141120
' "$out"; then ok "encdec: paged steps show shared pages and copies (json)"
else bad "encdec: paged steps show shared pages and copies (json)" "exit $status" "$(head -c 300 "$err")"; fi

for c in contiguous dynamic paged:page=16 paged:page=4 paged:page=1; do
    expect_ok "encdec: --compare identical, $c" '^beams identical: yes' \
        $KV run --model encdec --beams 4 --src-len 40 --cache "$c" --compare
done
expect_ok "encdec: --compare, width 1, full source" '^max score difference: 0 ' \
    $KV run --model encdec --compare
# token 4 is one this source's beams choose often: hypotheses end, the search stops early
expect_ok "encdec: --compare, an end token that ends hypotheses" '^beams identical: yes' \
    $KV run --model encdec --beams 4 --src-len 20 --set eos_token=4 --compare
expect_ok "encdec: an end token finishes hypotheses" '^ +1 +-?[0-9.]+ +-?[0-9.]+ +[0-9]+ eos ' \
    $KV run --model encdec --beams 4 --src-len 20 --set eos_token=4
expect_ok "encdec: the uncached path recomputes the cross K/V" 'cross K/V memory rows projected: cached 600 \(once\), uncached [0-9]{5,}' \
    $KV run --model encdec --beams 4 --compare
expect_ok "encdec: --no-cache" '^hypotheses, uncached' $KV run --model encdec --beams 2 --src-len 10 --no-cache
expect_ok "encdec: explicit source ids" 'source: 5 tokens \(given\), starting 3 4 5 6 7;' \
    $KV run --model encdec --beams 2 --prompt-ids 3,4,5,6,7 --tokens 3
expect_ok "encdec: tsv has a header row" '^run	step	beams	self_rows	cross_rows' \
    $KV run --model encdec --beams 2 --src-len 10 --tokens 3 --format tsv

run "encdec: json --compare parses and says identical" $KV run --model encdec --beams 4 --src-len 20 --compare --format json
if [ "$status" -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["compare"]["beams_identical"]' "$out"
then ok "encdec: json --compare parses and says identical"; else bad "encdec: json --compare parses and says identical" "exit $status"; fi

# the same seed gives the same beams, run after run
a=$($KV run --model encdec --beams 3 --src-len 16 --format tsv | cut -f20 | tr '\n' ' ')
b=$($KV run --model encdec --beams 3 --src-len 16 --format tsv | cut -f20 | tr '\n' ' ')
[ "$a" = "$b" ] && ok "encdec: same seed, same beams" || bad "encdec: same seed, same beams" "$a" "$b"

# bad input: one line on stderr, exit 2, nothing on stdout
expect_fail "encdec: --beams 0" 2 "--beams: must be at least 1" $KV run --model encdec --beams 0
expect_fail "encdec: --beams x" 2 "--beams: 'x' is not a whole number" $KV run --model encdec --beams x
expect_fail "encdec: a decoder-only model with --src-len" 2 "model 'tiny' is decoder-only" $KV run --model tiny --src-len 10
expect_fail "encdec: a decoder-only model with --beams" 2 "model 'tiny' is decoder-only" $KV run --model tiny --beams 4
expect_fail "encdec: a decoder-only model with encoder keys" 2 "encoder_layers and src_len apply to architecture = encdec" \
    $KV run --set src_len=5
expect_fail "encdec: --chunk is for decoder-only models" 2 "--chunk applies to decoder-only models" \
    $KV run --model encdec --chunk 2
expect_fail "encdec: --prompt-len is for decoder-only models" 2 "source length is --src-len" \
    $KV run --model encdec --prompt-len 5
expect_fail "encdec: --tokens beyond the target length" 2 "at most max_seq_len = 20" $KV run --model encdec --tokens 21
expect_fail "encdec: two sources" 2 "reads one source" $KV run --model encdec --prompt-ids '1,2;3,4'
expect_fail "encdec: a source id outside the vocabulary" 2 "token id 99 is outside" $KV run --model encdec --prompt-ids 1,99
expect_fail "encdec: --src-len disagrees with --prompt" 2 "--src-len 5 but the prompt holds 3" \
    $KV run --model encdec --prompt-ids 1,2,3 --src-len 5
expect_fail "encdec: --alpha out of range" 2 "--alpha: must be 0 to 10" $KV run --model encdec --alpha -1
expect_fail "encdec: end token equal to the start token" 2 "eos_token and bos_token are both 1" \
    $KV run --model encdec --set eos_token=1
expect_fail "encdec: bad architecture" 2 "architecture: 'seq2seq' is not one of decoder, encdec" \
    $KV run --model encdec --set architecture=seq2seq
expect_fail "encdec: a bad cache spec" 2 "unknown cache 'bogus'" $KV run --model encdec --cache bogus
