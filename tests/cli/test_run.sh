# test_run.sh: `kvscope run`, `kvscope example` and the top level, as a user
# drives them: output that says what it should, and one clean line on bad input.

expect_ok "kvscope --help lists the commands" '^  example ' $KV --help
expect_ok "kvscope --version" '^kvscope [0-9]+\.[0-9]+' $KV --version
expect_fail "kvscope with no command opens the view: not on a pipe" 2 \
    'the interactive view needs a terminal; for text output use kvscope run or kvscope example' $KV
expect_ok "run --help explains --compare" '--compare' $KV run --help
expect_ok "example --help" 'worked example' $KV example --help

expect_ok "example: 6 token rows cached, 18 uncached" 'projected; without it 18 \(3 \+ 4 \+ 5 \+ 6\)' $KV example
expect_ok "example: cached and uncached tokens identical" 'identical' $KV example
expect_ok "example with the dynamic cache" 'identical' $KV example --cache dynamic
expect_fail "example: an MLA model has no K and V rows to print" 2 "caches MLA latents" $KV example --model mla-tiny
expect_fail "example: an encoder-decoder is not the walk's decoder" 2 "is an encoder-decoder" $KV example --model encdec

expect_ok "run --compare: identical tokens" '^tokens identical: yes' $KV run --tokens 6 --compare
# what was generated comes first, where a reader sees it; then the table of passes
run "run: the text before the table" $KV run --tokens 6
text_at=$(grep -n '^text (sequence 0' "$out" | cut -d: -f1)
table_at=$(grep -n '^run  *step' "$out" | cut -d: -f1)
[ "$status" -eq 0 ] && [ -n "$text_at" ] && [ -n "$table_at" ] && [ "$text_at" -lt "$table_at" ] &&
    ok "run: the text before the table" || bad "run: the text before the table" "text at line $text_at, table at $table_at"
# the FLOPs' parts add up to the total, for each run and each model kind
for m in kjv-tiny mla-tiny; do
    run "run --compare: FLOPs' parts sum to the total ($m)" $KV run --model $m --tokens 5 --compare
    sums=$(sed -n 's/.* \([0-9]*\) FLOPs = projections \([0-9]*\) + attention \([0-9]*\) + FFN \([0-9]*\) + other \([0-9]*\) .*/\1 \2 \3 \4 \5/p' "$out" |
        awk '{ print ($1 == $2 + $3 + $4 + $5 && $5 > 0) ? "yes" : "no" }' | tr '\n' ' ')
    [ "$status" -eq 0 ] && [ "$sums" = "yes yes " ] && ok "$name" || bad "$name" "exit $status, sums: $sums" \
        "$(grep 'FLOPs =' "$out")"
done
# --help names every kernel table this machine runs
isa_help=$($KV run --help | grep -A1 -- '--isa ISA')
isa_missing=""
for isa in ref avx2 avx512 neon; do
    if $KV run --model tiny --isa $isa --tokens 1 >/dev/null 2>&1; then
        printf '%s' "$isa_help" | grep -qw $isa || isa_missing="$isa_missing $isa"
    fi
done
[ -z "$isa_missing" ] && ok "run --help names every --isa this machine runs" ||
    bad "run --help names every --isa this machine runs" "missing:$isa_missing" "$isa_help"
expect_ok "run --compare on small, GQA, chunked prefill, batch 2" '^tokens identical: yes' \
    $KV run --model small --prompt-len 12 --chunk 5 --batch 2 --tokens 5 --compare
expect_ok "run --compare with the dynamic cache counts copies" 'copied by reallocation' \
    $KV run --cache dynamic --tokens 4 --compare
expect_ok "run with explicit batch prompts" 'tokens \(sequence 1\)' $KV run --prompt-ids '1,2,3;4,5,6' --tokens 3
expect_ok "run --no-cache" '^uncached +0 prefill' $KV run --no-cache --tokens 3
expect_ok "run with sampling prints its seed" 'sample seed 9' $KV run --temperature 0.8 --top-k 5 --sample-seed 9 --tokens 4
expect_ok "run tsv has a header row" '^run	step	phase	tokens_projected' $KV run --tokens 3 --format tsv
expect_ok "run prints the generator and seed" 'gsl mt19937, seed 42' $KV run --model tiny --tokens 2
expect_ok "run: a shift cache generates past the model's context" 'context shift: [1-9][0-9]* shift\(s\) discarded' \
    $KV run --model tiny --set max_seq_len=32 --cache shift:keep=4 --tokens 100
expect_fail "run: past the context, other caches are refused" 2 "needs 107 positions; .*max_seq_len 32 \(a shift cache runs past it\)" \
    $KV run --model tiny --set max_seq_len=32 --cache ring:window=8 --tokens 100

run "run json parses" $KV run --tokens 3 --compare --format json
if [ "$status" -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["compare"]["tokens_identical"]' "$out"
then ok "run json parses and says identical"; else bad "run json parses and says identical" "exit $status"; fi

# the same seed gives the same tokens, run after run
a=$($KV run --tokens 6 --format tsv | cut -f20 | tr '\n' ' ')
b=$($KV run --tokens 6 --format tsv | cut -f20 | tr '\n' ' ')
[ "$a" = "$b" ] && ok "same seed, same tokens" || bad "same seed, same tokens" "$a" "$b"

# sampling is reproducible from its seed too
a=$($KV run --tokens 6 --temperature 1 --sample-seed 3 --format tsv | cut -f20 | tr '\n' ' ')
b=$($KV run --tokens 6 --temperature 1 --sample-seed 3 --format tsv | cut -f20 | tr '\n' ' ')
[ "$a" = "$b" ] && ok "same sample seed, same tokens" || bad "same sample seed, same tokens" "$a" "$b"

# bad input: one line on stderr, exit 2, nothing on stdout
expect_fail "unknown command" 2 "unknown command 'frobnicate'" $KV frobnicate
expect_fail "unknown model" 2 "unknown model 'gpt-9'.*tiny" $KV run --model gpt-9
expect_fail "unknown option" 2 "unknown or incomplete option '--bogus'" $KV run --bogus
expect_fail "missing option value" 2 "incomplete option" $KV run --tokens
expect_fail "unknown --set key" 2 "unknown key 'colour'" $KV run --set colour=blue
expect_fail "--set without =" 2 "is not KEY=VALUE" $KV run --set n_layers
expect_fail "zero tokens" 2 "--tokens: must be at least 1" $KV run --tokens 0
expect_fail "negative tokens" 2 "--tokens: must be at least 1, got '-3'" $KV run --tokens -3
expect_fail "zero layers" 2 "n_layers: must be at least 1, got 0" $KV run --set n_layers=0
expect_fail "n_heads not a multiple of n_kv_heads" 2 "not a multiple of n_kv_heads" $KV run --set n_heads=3
expect_fail "prompt plus tokens beyond max_seq_len" 2 "needs 300 positions; model 'tiny' has max_seq_len 256" \
    $KV run --model tiny --prompt-len 100 --tokens 201
expect_fail "unknown cache" 2 "unknown cache 'magic' \(accepted: contiguous, dynamic, .*paged" $KV run --cache magic
expect_fail "bad cache option" 2 "has no option 'window'" $KV run --cache contiguous:window=4
# a spec asking for more memory than the machine has is refused from its size, before any allocation
expect_fail "paged pool beyond the machine's memory" 2 "cache 'paged' needs .* for 4000000000000 pages of 16 rows; .* holds at most [0-9]+$" \
    $KV run --cache paged:page=16,pages=4000000000000
# a cache sized past the positions a sequence reaches is kept at them (kjv-tiny: max_seq_len 128): it
# reserves what the same cache sized at 128 does (issue 21: forks copied what the option reserved)
for pair in ring:window=4,sinks=2,pass=3222222222222/ring:window=126,sinks=2,pass=1 \
    h2o:budget=100000000000000/h2o:budget=128,pass=1 mixed:hot=100000000000000,group=16/mixed:hot=128,group=16 \
    kivi:group=99999999999999/kivi:group=129; do
    run "huge" $KV run --cache "${pair%/*}" --tokens 2
    huge=$(grep 'cached cache:' "$out" | sed 's/.*used, //')
    run "at max" $KV run --cache "${pair#*/}" --tokens 2
    at_max=$(grep 'cached cache:' "$out" | sed 's/.*used, //')
    if [ -n "$huge" ] && [ "$huge" = "$at_max" ]; then ok "${pair%/*} reserves as ${pair#*/}: $huge"
    else bad "${pair%/*} reserves as ${pair#*/}" "got: '$huge' vs '$at_max'"; fi
done
expect_fail "repeated cache option" 2 "option 'window' is given twice" $KV run --cache ring:window=16,window=32
# sinks=0 is a plain window: the same tokens as no sinks at all
run "ring sinks=0 is the plain window" $KV run --model small --cache ring:window=8,sinks=0 --tokens 12
with0=$(grep '^tokens (sequence 0)' "$out")
run "ring sinks=0 is the plain window" $KV run --model small --cache ring:window=8 --tokens 12
plain=$(grep '^tokens (sequence 0)' "$out")
[ -n "$plain" ] && [ "$with0" = "$plain" ] && ok "$name" || bad "$name" "sinks=0: $with0" "none:    $plain"
expect_fail "ring: a negative sink count" 2 "option sinks: '-1' is not a whole number" \
    $KV run --cache ring:window=8,sinks=-1
expect_fail "non-numeric token ids" 2 "'a' is not a whole number" $KV run --prompt-ids 1,a,3
expect_fail "token id beyond the vocabulary" 2 "token id 999 is outside" $KV run --model tiny --prompt-ids 1,999
expect_fail "unequal batch prompts" 2 "prompts differ in length" $KV run --prompt-ids '1,2;3'
expect_fail "bad format" 2 "'xml' is not one of table, tsv, json" $KV run --format xml
expect_fail "bad temperature" 2 "--temperature: must be 0" $KV run --temperature -1
expect_fail "a model larger than this machine" 2 "needs .* but this machine has" \
    $KV run --set d_model=16000000 --set vocab=16000000
expect_fail "--no-cache with --compare" 2 "exclude each other" $KV run --no-cache --compare

tmp_ini=$(mktemp --suffix=.ini)
printf 'd_model = 16\nthis is not a key value line\n' >"$tmp_ini"
expect_fail "malformed ini line" 2 "line 2: malformed line" $KV run --model "$tmp_ini"
rm -f "$tmp_ini"
expect_ok "run --bug --compare reports the damage, exit 0" "a pitfall is on" $KV run --bug rope-on-v --tokens 4 --compare
expect_fail "unknown bug" 2 "--bug: .nope. is not one of" $KV run --bug nope
# --threads: a wide pass cut by rows on the pool; the tokens, every pass's counters and the
# cached-against-uncached logit difference are the same for 1, 2 and 3 threads
th_out=
for n in 1 2 3; do
    th_out="$th_out$($KV run --model kjv-small --prompt-len 64 --tokens 3 --no-cache --format tsv --threads $n |
        cut -f1-18,20 | md5sum)
$($KV run --model kjv-small --prompt-len 64 --tokens 3 --compare --threads $n | grep '^max logit difference' | md5sum)
"
done
if [ "$(printf '%s' "$th_out" | sort -u | wc -l)" -eq 2 ] && ! printf '%s' "$th_out" | grep -q d41d8cd98f00b204e9800998ecf8427e
then ok "run --threads 1, 2, 3: the same tokens, counters and logit difference"
else bad "run --threads 1, 2, 3: the same tokens, counters and logit difference" "$th_out"; fi
expect_fail "run --threads past the pool's limit" 2 "--threads: at most" $KV run --threads 1000
