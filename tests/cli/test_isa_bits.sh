# test_isa_bits.sh: the integer path (--int-dot) gives the same bits on
# every ISA path this CPU runs: on a q4_0 export of kjv-small, eval's total
# and every position's -ln p (json: every digit of a double) for an f32, an
# f16 and a q8_0 / q4_0 cache, byte for byte against --isa ref's; and on a
# tiny q4_0 model with heads of 128 values in groups of 2 (the f32 codec's
# two-chain dot), every matrix a multiple of 32 wide (all integer dots).
# And the f32 matmul's one order: a prefill of 64 tokens (the stored
# matrices decoded to f32 tiles and multiplied so), and a q4_0 export of
# kjv-tiny, whose w_down (172 wide) stays f32 and goes through the f32
# matmul every step: every position's -ln p the same bytes on every ISA.

ib_dir=$(mktemp -d)
"$KV" export --model kjv-small --type q4_0 --gguf "$ib_dir/small.q4_0.gguf" --quiet >/dev/null 2>&1
"$KV" export --model kjv-tiny --type q4_0 --gguf "$ib_dir/kjv-tiny.q4_0.gguf" --quiet >"$ib_dir/tiny.export" 2>&1
"$KV" export --model tiny --set head_dim=128 --set n_heads=4 --set n_kv_heads=2 --set ffn_dim=192 --type q4_0 \
    --gguf "$ib_dir/hd128.q4_0.gguf" --quiet >/dev/null 2>&1
# the ISAs this CPU runs, as kvscope lists them refusing one it does not know
ib_isas=$("$KV" run --isa none --model tiny --tokens 1 2>&1 | sed -n 's/.*this CPU runs: \(.*\), auto).*/\1/p' |
    tr -d ',')
case "$(uname -m)" in
x86_64) ib_known="ref avx2 avx512" ;;
aarch64) ib_known="ref neon" ;;
*) ib_known="ref" ;;
esac
for ib_isa in $ib_known; do
    case " $ib_isas " in *" $ib_isa "*) ;; *) echo "  skip  --isa $ib_isa: this CPU cannot run it" ;; esac
done
ib_caches="--cache contiguous+quant:k=f16,v=f16 --cache contiguous+quant:k=q8_0,v=q4_0"
ib_err=""
for ib_isa in $ib_isas; do
    # shellcheck disable=SC2086 # ib_caches: words on purpose
    "$KV" eval --weights "$ib_dir/small.q4_0.gguf" --int-dot --isa "$ib_isa" --split validation --tokens 96 \
        $ib_caches --format tsv >"$ib_dir/total.$ib_isa" 2>"$err" || ib_err="$ib_err eval-$ib_isa"
    # shellcheck disable=SC2086
    "$KV" eval --weights "$ib_dir/small.q4_0.gguf" --int-dot --isa "$ib_isa" --split validation --tokens 96 \
        $ib_caches --per-position --format json >"$ib_dir/pos.$ib_isa" 2>>"$err" || ib_err="$ib_err per-position-$ib_isa"
    "$KV" eval --weights "$ib_dir/hd128.q4_0.gguf" --int-dot --isa "$ib_isa" --text README.md --tokens 48 \
        --per-position --format json >"$ib_dir/hd128.$ib_isa" 2>>"$err" || ib_err="$ib_err hd128-$ib_isa"
    "$KV" eval --weights "$ib_dir/small.q4_0.gguf" --int-dot --isa "$ib_isa" --split validation --tokens 96 \
        --prefill 64 --per-position --format json >"$ib_dir/pre64.$ib_isa" 2>>"$err" || ib_err="$ib_err prefill-$ib_isa"
    for ib_p in 1 64; do
        # 256 tokens: w_down's products summed in 8 lanes instead of 16 move a -ln p here only past 200
        "$KV" eval --weights "$ib_dir/kjv-tiny.q4_0.gguf" --int-dot --isa "$ib_isa" --split validation --tokens 256 \
            --prefill $ib_p --per-position --format json >"$ib_dir/tiny$ib_p.$ib_isa" 2>>"$err" ||
            ib_err="$ib_err kjv-tiny-prefill-$ib_p-$ib_isa"
    done
done
if [ -z "$ib_isas" ] || [ "${ib_isas%% *}" != ref ]; then
    bad "isa bits: the ISAs this CPU runs, from kvscope's refusal of an unknown one" "got: '$ib_isas'"
elif [ -n "$ib_err" ]; then
    bad "isa bits: eval on every ISA" "failed:$ib_err" "$(head -c 300 "$err")"
else
    ib_ref_total=$(cut -f4 "$ib_dir/total.ref" | sed -n 2,4p | tr '\n' ' ')
    ib_same=yes ib_report=""
    for ib_isa in $ib_isas; do
        ib_total=$(cut -f4 "$ib_dir/total.$ib_isa" | sed -n 2,4p | tr '\n' ' ')
        ib_report="$ib_report $ib_isa: $ib_total;"
        [ "$ib_total" = "$ib_ref_total" ] || ib_same=no
    done
    # three caches' totals, each a number
    if [ "$ib_same" = yes ] && [ "$(echo "$ib_ref_total" | wc -w)" -eq 3 ] &&
        echo "$ib_ref_total" | grep -Eq '^([0-9]+\.[0-9]+ ){3}$'; then
        ok "isa bits: eval --int-dot's total the same on $ib_isas (three caches)"
    else bad "isa bits: eval --int-dot's total the same on $ib_isas (three caches)" "$ib_report"; fi
    ib_same=yes
    for ib_isa in $ib_isas; do
        cmp -s "$ib_dir/pos.ref" "$ib_dir/pos.$ib_isa" || ib_same="no ($ib_isa)"
    done
    # 95 scored positions a cache, each a double in full
    if [ "$ib_same" = yes ] && [ "$(grep -Ec '^ +[0-9]+\.[0-9]{12,},?$' "$ib_dir/pos.ref")" -eq $((3 * 95)) ]; then
        ok "isa bits: every position's -ln p the same bytes on $ib_isas"
    else bad "isa bits: every position's -ln p the same bytes on $ib_isas" "$ib_same" \
        "$(diff "$ib_dir/pos.ref" "$ib_dir/pos.$ib_isa" | head -4)"; fi
    ib_same=yes
    for ib_isa in $ib_isas; do
        cmp -s "$ib_dir/hd128.ref" "$ib_dir/hd128.$ib_isa" || ib_same="no ($ib_isa)"
    done
    if [ "$ib_same" = yes ] && [ "$(grep -Ec '^ +[0-9]+\.[0-9]{12,},?$' "$ib_dir/hd128.ref")" -eq 47 ]; then
        ok "isa bits: heads of 128 in groups of 2, every position's -ln p the same bytes on $ib_isas"
    else bad "isa bits: heads of 128 in groups of 2, every position's -ln p the same bytes on $ib_isas" "$ib_same" \
        "$(diff "$ib_dir/hd128.ref" "$ib_dir/hd128.$ib_isa" | head -4)"; fi
    for ib_name in pre64 tiny1 tiny64; do
        case $ib_name in # positions scored, and what the case runs
        pre64) ib_want=32 ib_what="kjv-small q4_0, a prefill of 64 (96 tokens)" ;;
        tiny1) ib_want=255 ib_what="kjv-tiny q4_0 (w_down kept in f32), one token a step (256 tokens)" ;;
        *) ib_want=192 ib_what="kjv-tiny q4_0 (w_down kept in f32), a prefill of 64 (256 tokens)" ;;
        esac
        ib_same=yes
        for ib_isa in $ib_isas; do
            cmp -s "$ib_dir/$ib_name.ref" "$ib_dir/$ib_name.$ib_isa" || ib_same="no ($ib_isa)"
        done
        if [ "$ib_same" = yes ] && [ "$(grep -Ec '^ +[0-9]+\.[0-9]{12,},?$' "$ib_dir/$ib_name.ref")" -eq "$ib_want" ]; then
            ok "isa bits: $ib_what, every position's -ln p the same bytes on $ib_isas"
        else bad "isa bits: $ib_what, every position's -ln p the same bytes on $ib_isas" "$ib_same" \
            "$(diff "$ib_dir/$ib_name.ref" "$ib_dir/$ib_name.$ib_isa" | head -4)"; fi
    done
    # the export kept a matrix in f32, or the kjv-tiny cases miss the f32 matmul's decode path
    if grep -q 'kept in f32' "$ib_dir/tiny.export"; then ok "isa bits: kjv-tiny's q4_0 export keeps a matrix in f32"
    else bad "isa bits: kjv-tiny's q4_0 export keeps a matrix in f32" "$(head -c 300 "$ib_dir/tiny.export")"; fi
fi
rm -rf "$ib_dir"
