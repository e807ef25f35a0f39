# test_serve.sh: `kvscope serve`: a workload served over one page pool, and
# every kind of bad input refused in one line before anything runs.

expect_ok "serve: a small workload finishes, every request done" '^24 requests in [0-9]+ steps' \
    $KV serve --model tiny --requests 24 --rate 1 --prompt-len 8..24 --output-len 4..12 --shared-prefix 8 \
    --cache paged:page=8,pages=40 --slots 6
grep -q '^prefix hits\|prefix hits [1-9]' "$out" && ok "serve: the shared prefix is hit" ||
    bad "serve: the shared prefix is hit" "$(tail -5 "$out")"
expect_ok "serve: a tight pool preempts and still finishes" 'preemptions [1-9]' \
    $KV serve --model tiny --requests 16 --rate 8 --prompt-len 16 --output-len 24 \
    --cache paged:page=8,pages=12 --slots 6
expect_ok "serve: --preempt swap copies rows out and back instead" 'by swap: [0-9.]+ KiB copied out' \
    $KV serve --model tiny --requests 16 --rate 8 --prompt-len 16 --output-len 24 \
    --cache paged:page=8,pages=12 --slots 6 --preempt swap
expect_fail "serve: swap needs an f32 cache" 2 'needs an f32 cache' \
    $KV serve --model tiny --cache paged:page=8,pages=64+quant:k=q8_0,v=q8_0 --preempt swap
expect_fail "serve: --preempt of another kind" 2 "'later' is not recompute or swap" $KV serve --preempt later
expect_ok "serve --format json: the summary and every step" '"summary"' \
    $KV serve --model tiny --requests 8 --rate 1 --cache paged:page=8,pages=40 --format json
said=$(python3 -c 'import json,sys; d = json.load(open(sys.argv[1])); s = d["summary"]
print("ok" if s["requests"] == 8 and len(d["steps"]) == s["steps"] and d["steps"][-1]["done"] == 8 else d)' "$out")
[ "$said" = ok ] && ok "serve --format json: 8 requests, a row per step, all done at the last" ||
    bad "serve --format json: 8 requests, a row per step, all done at the last" "$said"
expect_ok "serve --format tsv: a header and a row per step" '^step	running	waiting	done' \
    $KV serve --model tiny --requests 8 --rate 1 --cache paged:page=8,pages=40 --format tsv
# a trace: requests as listed, then every kind of bad file
strace=$(mktemp -d)
printf '# arrival prompt output\n0 20 10\n0 24 8\n\n3 16 12\n5 40 6 # a long prompt\n' >"$strace/ok.txt"
expect_ok "serve --trace: the 4 requests of the file, 36 tokens" '^4 requests in [0-9]+ steps.*: 36 tokens generated' \
    $KV serve --model tiny --trace "$strace/ok.txt" --cache paged:page=8,pages=40
: >"$strace/empty.txt"
printf '# nothing but a comment\n\n' >"$strace/comments.txt"
printf '0 20 10\n5 10 10\n3 10 10\n' >"$strace/unsorted.txt"
printf '0 -20 10\n' >"$strace/negative.txt"
printf '0 20\n' >"$strace/short.txt"
printf '0 100000 10\n' >"$strace/absurd.txt"
printf '99999999999 10 10\n' >"$strace/late.txt"
expect_fail "serve --trace: a missing file" 1 'missing.txt' $KV serve --model tiny --trace "$strace/missing.txt"
expect_fail "serve --trace: an empty file" 2 'is empty' $KV serve --model tiny --trace "$strace/empty.txt"
expect_fail "serve --trace: no request in it" 2 'no requests in it' $KV serve --model tiny --trace "$strace/comments.txt"
expect_fail "serve --trace: arrivals out of order" 2 'line 3: arrival 3 comes before the previous 5' \
    $KV serve --model tiny --trace "$strace/unsorted.txt"
expect_fail "serve --trace: a negative length" 2 'line 1: prompt length' $KV serve --model tiny --trace "$strace/negative.txt"
expect_fail "serve --trace: a short line" 2 'line 1: 2 fields' $KV serve --model tiny --trace "$strace/short.txt"
expect_fail "serve --trace: a prompt beyond the model" 2 'the longest request needs 100009 positions' \
    $KV serve --model tiny --trace "$strace/absurd.txt"
expect_fail "serve --trace: an arrival far away" 2 'arrives at step 99999999999; at most 1000000' \
    $KV serve --model tiny --trace "$strace/late.txt"
rm -rf "$strace"
expect_fail "serve: a cache that is not paged" 2 'must be paged' $KV serve --model tiny --cache contiguous
expect_fail "serve: a pool too small for one request" 2 'the pool holds 2' \
    $KV serve --model tiny --cache paged:page=8,pages=2
expect_fail "serve: a rate of 0" 2 'must be above 0' $KV serve --model tiny --rate 0
expect_fail "serve: a range that runs backwards" 2 "'9..3' runs backwards" $KV serve --prompt-len 9..3
expect_fail "serve: a prefix longer than the shortest prompt" 2 'shared prefix of 20 is longer' \
    $KV serve --model tiny --prompt-len 10..30 --shared-prefix 20
expect_fail "serve: no slots" 2 'slots: must be at least 1' $KV serve --slots 0
expect_fail "serve: an unknown option" 2 "unknown or incomplete option '--nope'" $KV serve --nope
# parallel sampling: forked requests' samples share the prompt's pages, the partial last one copied on write
expect_ok "serve --samples: forked requests share their prompt's pages, copied on write" \
    'parallel sampling: [1-9][0-9]* requests forked into 3 samples each; [1-9][0-9]* prompt pages shared at the forks instead of written, [1-9][0-9]* copied on write' \
    $KV serve --model tiny --requests 16 --rate 1 --prompt-len 10..30 --output-len 8..16 --samples 3 \
    --fork-share 0.5 --cache paged:page=8,pages=40
expect_ok "serve --samples --format json: the fork counters" '"cow_copies": [1-9]' \
    $KV serve --model tiny --requests 8 --rate 1 --prompt-len 12 --samples 2 --cache paged:page=8,pages=40 \
    --format json
expect_fail "serve: --samples below 2" 2 'samples: a forked request draws at least 2 samples, not 1' \
    $KV serve --samples 1
expect_fail "serve: --samples that is not a number" 2 'samples' $KV serve --samples many
expect_fail "serve: a fork share beyond 1" 2 'a fork share of 1.5; it is a share of the requests, from 0 to 1' \
    $KV serve --model tiny --samples 2 --fork-share 1.5
expect_fail "serve: a fork share without --samples" 2 'needs at least 2 samples' \
    $KV serve --model tiny --fork-share 0.5
expect_fail "serve: more samples than slots" 2 'runs its 9 samples at once; there are 8 slots' \
    $KV serve --model tiny --samples 9
