# speed.sh: `make peer-speed` (sourced by peer.sh --speed, its driver
# built): one decode step of the same GGUF in llama.cpp and in kvscope
# (default path, and --int-dot), f16, q8_0 and q4_0 weights, at 1 and 2
# threads and each context; the programs in turn, round after round, each
# figure the median of the rounds' (each round's the median of its steps).
# llama.cpp fills its f16 cache by a prefill; kvscope's bench --decode
# fills its f16 cache with seeded rows (the step reads the same bytes).
#   PEER_SPEED_SHAPE     tinyllama (default: TinyLlama-1.1B's shape,
#                        synthetic weights) or tiny (a check in seconds)
#   PEER_SPEED_CONTEXTS  default 2048,16384 (tiny: 64,128)
#   PEER_SPEED_ROUNDS    default 3; PEER_SPEED_STEPS default 5
SHAPE=${PEER_SPEED_SHAPE:-tinyllama}
case $SHAPE in
tinyllama) SET="--set n_layers=22 --set d_model=2048 --set n_heads=32 --set n_kv_heads=4 --set head_dim=64
    --set ffn_dim=5632 --set max_seq_len=2048" CTXS=${PEER_SPEED_CONTEXTS:-2048,16384} ;;
tiny) SET="--set n_layers=2 --set d_model=256 --set n_heads=8 --set n_kv_heads=2 --set head_dim=32
    --set ffn_dim=512 --set max_seq_len=256 --set vocab=512" CTXS=${PEER_SPEED_CONTEXTS:-64,128} ;;
*) die "PEER_SPEED_SHAPE: tinyllama or tiny, not $SHAPE" ;;
esac
ROUNDS=${PEER_SPEED_ROUNDS:-3} STEPS=${PEER_SPEED_STEPS:-5}
D=$P/speed
mkdir -p "$D"
median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print NR ? v[int((NR + 1) / 2)] : "-" }'; }
# kvscope's step in ms: bench --decode's f16-cache row at context C
kv_ms() { # GGUF C THREADS [--int-dot]
    "$BIN" bench --decode --weights "$1" --contexts "$2" --steps "$STEPS" --reps 1 --threads "$3" ${4:-} \
        --pool-mib 8 --format tsv --quiet 2>/dev/null |
        awk -F'\t' -v c="$2" '$1 == "decode" && $7 == c && $8 == "f16" { printf "%.3f", 1e3 * $9 }'
}
echo "decode step, ms (median of $ROUNDS rounds of $STEPS steps; shape $SHAPE; load: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-6s %-7s %-7s %10s %10s %10s %s\n' weights context threads llama.cpp kvscope int-dot "kvscope/llama.cpp"
for t in f16 q8_0 q4_0; do
    G=$D/$SHAPE.$t.gguf
    [ -f "$G" ] || "$BIN" export --model llama-2-7b $SET --set name=$SHAPE-shape --gguf "$G" --type $t --quiet \
        >/dev/null || die "kvscope export $SHAPE $t failed"
    for c in $(echo "$CTXS" | tr ',' ' '); do
        l1="" l2="" k1="" k2="" i1="" i2=""
        r=0
        while [ $r -lt "$ROUNDS" ]; do
            out=$("$P/peer" decode "$G" "$c" "$STEPS" 1,2) || die "peer decode $t $c failed"
            l1="$l1 $(echo "$out" | sed -n 's/.*threads=1 ms=\([0-9.]*\).*/\1/p')"
            l2="$l2 $(echo "$out" | sed -n 's/.*threads=2 ms=\([0-9.]*\).*/\1/p')"
            k1="$k1 $(kv_ms "$G" "$c" 1)" k2="$k2 $(kv_ms "$G" "$c" 2)"
            if [ $t != f16 ]; then i1="$i1 $(kv_ms "$G" "$c" 1 --int-dot)" i2="$i2 $(kv_ms "$G" "$c" 2 --int-dot)"; fi
            r=$((r + 1))
        done
        for n in 1 2; do
            eval "l=\$l$n k=\$k$n i=\$i$n"
            lm=$(echo "$l" | median) km=$(echo "$k" | median) im=$(echo "$i" | median)
            printf '%-6s %-7s %-7s %10s %10s %10s %s\n' $t "$c" $n "$lm" "$km" "$im" \
                "$(awk -v a="$km" -v b="$lm" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')"
        done
    done
done
echo "peer-speed: $(($(date +%s) - T0)) s (load after: $(cut -d' ' -f1-3 /proc/loadavg))"
