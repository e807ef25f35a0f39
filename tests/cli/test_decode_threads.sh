# test_decode_threads.sh: a decode step's matrices and lm head split by
# output rows across --threads give the same logits, byte for byte, for
# 1, 2 and 3 threads: 32 greedy tokens dumped (logits.npy) from an f32
# model and kjv-small's GGUF exports (f16; q4_0 by integer dots, the
# default, and exact with --int-dot=off; q8_0 and q4_0 with the cache's
# integer dots too, both roundings).

dt_dir=$(mktemp -d)
for t in f16 q8_0 q4_0; do
    "$KV" export --weights data/weights/kjv-small.kvw --type $t --gguf "$dt_dir/small.$t.gguf" --quiet >/dev/null 2>&1
done
# rows of 512 and 1024 values: the VNNI matvec's (qmatvec_vnni.c) where the CPU has it
"$KV" export --model tiny --set d_model=512 --set ffn_dim=1024 --set vocab=1280 --type q4_0 --gguf "$dt_dir/wide.q4_0.gguf" --quiet \
    >/dev/null 2>&1
dt_case() { # NAME OPTS...: dump with 1, 2 and 3 threads, compare the logits' bytes
    what=$1; shift
    rm -rf "$dt_dir/t1" "$dt_dir/t2" "$dt_dir/t3"
    for n in 1 2 3; do
        "$KV" dump "$@" --prompt "In the beginning" --tokens 32 --threads $n --out "$dt_dir/t$n" >/dev/null 2>"$err" || {
            bad "$what: dump --threads $n" "$(head -c 300 "$err")"; return; }
    done
    if cmp -s "$dt_dir/t1/logits.npy" "$dt_dir/t2/logits.npy" && cmp -s "$dt_dir/t1/logits.npy" "$dt_dir/t3/logits.npy" &&
        cmp -s "$dt_dir/t1/tokens.npy" "$dt_dir/t3/tokens.npy" &&
        [ "$(wc -c <"$dt_dir/t1/logits.npy")" -gt $((32 * 1024 * 4)) ]; then
        ok "$what: 32 greedy steps' logits the same bytes on 1, 2 and 3 threads"
    else bad "$what: 32 greedy steps' logits the same bytes on 1, 2 and 3 threads" \
        "$(cmp "$dt_dir/t1/logits.npy" "$dt_dir/t2/logits.npy"; cmp "$dt_dir/t1/logits.npy" "$dt_dir/t3/logits.npy")"; fi
}
dt_case "f32 (kjv-small)" --model kjv-small
dt_case "f16 export" --weights "$dt_dir/small.f16.gguf"
dt_case "q4_0 export" --weights "$dt_dir/small.q4_0.gguf"
dt_case "q4_0 export, --int-dot=off" --weights "$dt_dir/small.q4_0.gguf" --int-dot=off
dt_case "q4_0 export, rows of 512 and 1024" --weights "$dt_dir/wide.q4_0.gguf"
dt_case "q8_0 export, --int-dot" --weights "$dt_dir/small.q8_0.gguf" --int-dot
dt_case "q4_0 export, --int-dot=ref" --weights "$dt_dir/small.q4_0.gguf" --int-dot=ref
dt_case "q4_0 export, --int-dot, batch 2" --weights "$dt_dir/small.q4_0.gguf" --int-dot --batch 2
expect_ok "dump --help names --threads" '--threads N' "$KV" dump --help
expect_fail "dump --threads 65 is refused" 2 "threads" "$KV" dump --model tiny --threads 65 --out "$dt_dir/no"
# bench --decode times its step on --threads (make peer-speed reads its f16 row)
run "bench --decode --threads 2" "$KV" bench --decode --weights "$dt_dir/small.q4_0.gguf" --contexts 64 --steps 2 \
    --reps 1 --threads 2 --pool-mib 8 --format tsv --quiet
if [ "$status" -eq 0 ] && awk -F'\t' '$1 == "decode" && $7 == 64 && $8 == "f16" && $9 > 0 { n++ } END { exit n != 1 }' "$out"
then ok "bench --decode --threads 2: a timed f16 row at context 64"
else bad "bench --decode --threads 2: a timed f16 row at context 64" "exit $status" "$(head -c 300 "$err")"; fi
expect_fail "bench --threads without --decode is refused" 2 "goes with --decode" "$KV" bench --threads 2 --quick
rm -rf "$dt_dir"
