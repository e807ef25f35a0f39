# speed.sh: `make peer-speed` (sourced by peer.sh --speed, its driver
# built): one decode step of the same GGUF in llama.cpp and in kvscope
# (default path, and the exact one: --int-dot=off), f16, q8_0 and q4_0
# weights, at 1 and 2
# threads and each context. llama.cpp fills its f16 cache once a cell, by
# a prefill; then the programs take turns, round after round (peer decode
# runs kvscope's round between its own), and each figure is the median of
# the rounds' (each round's, the median of its steps). kvscope's bench
# --decode fills its f16 cache with seeded rows (the step reads the same
# bytes).
#   PEER_SPEED_SHAPE     tinyllama (default: TinyLlama-1.1B's shape,
#                        synthetic weights) or tiny (a check in seconds)
#   PEER_SPEED_CONTEXTS  default 2048,16384 (tiny: 64,128)
#   PEER_SPEED_TYPES     default "f16 q8_0 q4_0"
#   PEER_SPEED_ROUNDS    default 3; PEER_SPEED_STEPS default 5
#   PEER_SPEED_EXACT     0: no --int-dot=off column (default 1)
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
# kvscope's round: its step in ms at 1 and 2 threads, default path and
# (quantized weights) --int-dot=off, from bench --decode's f16-cache row
cat >"$D/kv_round.sh" <<'ROUND'
# kv_round.sh BIN GGUF CONTEXT STEPS EXACT: one round of kvscope's steps
ms() { "$1" bench --decode --weights "$2" --contexts "$3" --steps "$4" --reps 1 --threads "$5" ${6:-} --pool-mib 8 \
    --format tsv --quiet 2>/dev/null | awk -F'\t' -v c="$3" '$1 == "decode" && $7 == c && $8 == "f16" { printf "%.3f", 1e3 * $9 }'; }
line="kv1=$(ms "$1" "$2" "$3" "$4" 1) kv2=$(ms "$1" "$2" "$3" "$4" 2)"
[ "$5" = 1 ] && line="$line exact1=$(ms "$1" "$2" "$3" "$4" 1 --int-dot=off) exact2=$(ms "$1" "$2" "$3" "$4" 2 --int-dot=off)"
echo "$line"
ROUND
pick() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" "$2" | tr '\n' ' '; }
echo "decode step, ms (median of $ROUNDS rounds of $STEPS steps; shape $SHAPE; load: $(cut -d' ' -f1-3 /proc/loadavg))"
printf '%-6s %-7s %-7s %10s %10s %10s %s\n' weights context threads llama.cpp kvscope exact "kvscope/llama.cpp"
for t in ${PEER_SPEED_TYPES:-f16 q8_0 q4_0}; do
    G=$D/$SHAPE.$t.gguf
    [ -f "$G" ] || "$BIN" export --model llama-2-7b $SET --set name=$SHAPE-shape --gguf "$G" --type $t --quiet \
        >/dev/null || die "kvscope export $SHAPE $t failed"
    int=1; [ $t = f16 ] || [ "${PEER_SPEED_EXACT:-1}" = 0 ] && int=0
    for c in $(echo "$CTXS" | tr ',' ' '); do
        "$P/peer" decode "$G" "$c" "$STEPS" 1,2 "$ROUNDS" "sh '$D/kv_round.sh' '$BIN' '$G' $c $STEPS $int" \
            >"$D/cell.txt" || die "peer decode $t $c failed"
        for n in 1 2; do
            lm=$(grep '^threads=' "$D/cell.txt" | sed -n "s/.*threads=$n ms=\([0-9.]*\).*/\1/p" | tr '\n' ' ' | median)
            km=$(pick "kv$n" "$D/cell.txt" | median) im=$([ $int = 1 ] && pick "exact$n" "$D/cell.txt" | median || echo -)
            printf '%-6s %-7s %-7s %10s %10s %10s %s\n' $t "$c" $n "$lm" "$km" "$im" \
                "$(awk -v a="$km" -v b="$lm" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }')"
        done
    done
done
echo "peer-speed: $(($(date +%s) - T0)) s (load after: $(cut -d' ' -f1-3 /proc/loadavg))"
