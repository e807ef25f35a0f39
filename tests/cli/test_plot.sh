# test_plot.sh: `kvscope plot`: every figure's data has its shape, obeys
# the physics (memory grows with context, uncached work above cached, the
# fitted slopes, paged waste grows with the page size, pages saved are the
# shared full pages of the prefix, copy-on-write beams hold no more than
# copying ones, MLA's FLOPs are its closed forms, eviction policies hold
# their budget and keep what their workload's structure favours), is
# byte-identical for the
# same seed, and draws without a word from gnuplot; without gnuplot the data
# and scripts are still written;
# bad input is one line and exit 2. Timings are never checked.

plot_tmp=$(mktemp -d)
export KVSCOPE_PLOTS=plots

expect_ok "plot --help says how to install gnuplot" 'gnuplot-nox' $KV plot --help
expect_ok "plot is listed in kvscope --help" '^  plot ' $KV --help
run "plot --list" $KV plot --list
ready=$(grep -Ec '^ +[0-9]+  [a-z-]+ +ready' "$out")
waiting=$(grep -Ec '^ +[0-9]+  [a-z-]+ +waiting' "$out")
if [ "$status" -eq 0 ] && [ "$ready" -eq 20 ] && [ "$waiting" -eq 0 ] && ! grep -q 'waits for' "$out" &&
    grep -Eq '^  8  eviction +ready' "$out"
then ok "plot --list: figures 1-20 ready, none waiting"
else bad "plot --list: figures 1-20 ready, none waiting" \
    "exit $status, ready $ready, waiting $waiting" "stdout: $(head -c 600 "$out")"; fi

# --- every figure, quick, drawn when gnuplot is here ------------------------
A=$plot_tmp/a
run "plot --all --quick" $KV plot --all --quick --seed 3 --out "$A"
if [ "$status" -eq 0 ] && [ ! -s "$err" ] && ! grep -q 'waiting' "$out" && grep -q '^ 8 eviction ' "$out"
then ok "plot --all --quick exits 0, quiet on stderr, makes figure 8, none waiting"
else bad "plot --all --quick exits 0, quiet on stderr, makes figure 8, none waiting" "exit $status" \
    "stderr: $(head -c 400 "$err")" "stdout: $(head -c 400 "$out")"; fi

# header FILE EXPECTED: the first row, exactly
header() {
    got=$(head -n 1 "$A/$1" 2>/dev/null)
    [ "$got" = "$2" ] && ok "$1: header row" || bad "$1: header row" "want: $2" "got:  $got"
}
# shape FILE ROWS COLS: data rows (after the header) and columns in every row
shape() {
    [ -s "$A/$1" ] || { bad "$1: $2 rows of $3 columns" "no file $1"; return; }
    rows=$(($(wc -l <"$A/$1") - 1))
    cols=$(awk -F'\t' '{ print NF }' "$A/$1" | sort -u | tr '\n' ' ')
    [ "$rows" -eq "$2" ] && [ "$cols" = "$3 " ] && ok "$1: $2 rows of $3 columns" ||
        bad "$1: $2 rows of $3 columns" "got $rows rows, column counts: $cols"
}
# check NAME AWK FILE: an awk program over the data rows prints "ok" or why not
check() {
    [ -s "$A/$3" ] || { bad "$1" "no file $3"; return; }
    said=$(awk -F'\t' "NR > 1 { $2 } END { if (!why) print \"ok\"; else print why }" "$A/$3")
    [ "$said" = ok ] && ok "$1" || bad "$1" "$said"
}
# slope FILE SERIES LO HI: the fitted slope of SERIES lies in [LO, HI]
slope() {
    s=$(awk -F'\t' -v s="$2" '$1 == s { print $6 }' "$A/$1" 2>/dev/null)
    awk -v s="$s" -v lo="$3" -v hi="$4" 'BEGIN { exit !(s != "" && s + 0 >= lo && s + 0 <= hi) }' &&
        ok "$1: $2 slope $s in [$3, $4]" || bad "$1: $2 slope in [$3, $4]" "got '$s'"
}

header projection.tsv "generated	cached_rows	uncached_rows	cached_rows_total	uncached_rows_total	cached_proj_flops_total	uncached_proj_flops_total"
shape projection.tsv 256 7
check "projection: cached projects 1 row a step, uncached n; totals grow, uncached above cached" \
    'if ($2 != 1 || $3 != $1 || $4 != $1 || $5 != $1 * ($1 + 1) / 2 || ($1 > 1 && $5 <= $4) || $7 < $6) why = why " row " $1' \
    projection.tsv
header projection.fits.tsv "series	quantity	x_from	x_to	points	slope	slope_err	prefactor	r2"
slope projection.fits.tsv cached 0.9 1.1
slope projection.fits.tsv uncached 1.9 2.1

header attention-flops.tsv "generated	cached_attn_flops	uncached_attn_flops	cached_attn_flops_total	uncached_attn_flops_total"
shape attention-flops.tsv 256 5
check "attention-flops: totals grow, uncached at or above cached, above from n = 2" \
    'if ($4 <= p4 || $5 <= p5 || $5 < $4 || ($1 > 1 && $5 <= $4) || $3 < $2) why = why " row " $1; p4 = $4; p5 = $5' \
    attention-flops.tsv
slope attention-flops.fits.tsv cached 1.9 2.1
slope attention-flops.fits.tsv uncached 2.9 3.1

header step-time.tsv "position	cached_seconds	uncached_seconds	cached_flops	uncached_flops"
shape step-time.tsv 48 5
check "step-time: positions 0.., times positive, uncached FLOPs grow and stay at or above cached" \
    'if ($1 != NR - 2 || $2 <= 0 || $3 <= 0 || $5 < $4 || $5 < p5) why = why " row " $1; p5 = $5' step-time.tsv

shape memory.tsv 10 8
check "memory: contexts double; every cache grows with context (mistral stops at its window)" \
    'if (p && $1 != 2 * p) why = why " context " $1; for (i = 2; i <= NF; i++) { if ($i < q[i] || (i != 5 && q[i] && $i != 2 * q[i])) why = why " col " i " at " $1; q[i] = $i } p = $1' \
    memory.tsv
check "memory: MQA < GQA < MHA; MLA latent < its decompressed K,V" \
    'if (!($4 < $3 && $3 < $2 && $7 < $6)) why = why " context " $1' memory.tsv
head -n 1 "$A/memory.tsv" | grep -q '^context	llama-2-7b MHA: 32 KV heads' && ok "memory.tsv: header names each cache shape" ||
    bad "memory.tsv: header names each cache shape" "got: $(head -n 1 "$A/memory.tsv" 2>/dev/null)"
shape memory.formats.tsv 6 8
check "memory.formats: f32 > f16 > q8_0 > q4_0 >= int4 = fp4 bytes per token, every shape" \
    'f[NR - 1] = $1; for (i = 2; i <= NF; i++) v[NR - 1, i] = $i; n = NF } END { for (i = 2; i <= n; i++) if (!(v[1,i] > v[2,i] && v[2,i] > v[3,i] && v[3,i] > v[4,i] && v[4,i] >= v[5,i] && v[5,i] == v[6,i])) why = why " col " i' \
    memory.formats.tsv

header bandwidth.tsv "format	bits_per_value	bytes_per_step	flash_seconds	flash_gb_per_s	naive_seconds	naive_gb_per_s	bandwidth_gb_per_s"
shape bandwidth.tsv 6 8
check "bandwidth: formats in order, fewer bytes per step as bits shrink, rates positive" \
    'split("f32 f16 q8_0 q4_0 int4 fp4", want, " "); if ($1 != want[NR - 1] || (NR > 2 && $3 > pb) || $5 <= 0 || $7 <= 0 || $8 <= 0) why = why " " $1; pb = $3' \
    bandwidth.tsv

header quant-error.tsv "format	bits_per_value	k_rms_error	v_rms_error	exact_fraction	attn_error_k_only	attn_error_v_only	attn_error_both	attn_error_both_max"
shape quant-error.tsv 6 9
check "quant-error: f32 exact; error grows f16 < q8_0 < q4_0, and int4, fp4 above q8_0" \
    'e[$1] = $8; x[$1] = $5; k[$1] = $3 } END { if (e["f32"] != 0 || x["f32"] != 1 || k["f32"] != 0) why = "f32 not exact"; if (!(e["f16"] > 0 && e["f16"] < e["q8_0"] && e["q8_0"] < e["q4_0"] && e["q8_0"] < e["int4"] && e["q8_0"] < e["fp4"])) why = why " order"' \
    quant-error.tsv
shape quant-error.hist.tsv 32 8
said=$(awk -F'\t' 'FNR == NR { if (FNR > 1) ex[FNR - 1] = $5; next }
    FNR > 1 { for (i = 3; i <= NF; i++) s[i - 2] += $i }
    END { for (f = 1; f <= 6; f++) { d = s[f] + ex[f] - 1; if (d > 1e-3 || d < -1e-3) why = why " format " f }
          print why ? why : "ok" }' "$A/quant-error.tsv" "$A/quant-error.hist.tsv" 2>&1)
[ "$said" = ok ] && ok "quant-error.hist: each format's shares add up to its inexact values" ||
    bad "quant-error.hist: each format's shares add up to its inexact values" "$said"

header paged.tsv "page_rows	requests	rows_held	pages_mapped	pages_used	waste_rows	waste_rows_per_request	expected_waste_per_request	pages_per_request	waste_percent	bytes_used	bytes_reserved	waste_rows_len_100"
shape paged.tsv 9 13
check "paged: page sizes 1..256 doubling; the same 64 requests; no sharing among them, pages cover the rows held" \
    'if ($1 != (NR == 2 ? 1 : 2 * p) || $2 != 64 || (NR > 2 && $3 != held) || $4 != $5 || $6 != $5 * $1 - $3) why = why " page " $1; p = $1; held = $3' \
    paged.tsv
check "paged: waste grows with the page size (per request on average, and for one length), near (P - 1) / 2" \
    'if ($7 < 0 || (NR > 2 && ($6 < w || $7 <= m || $13 < f)) || $8 != ($1 - 1) / 2 || $7 - $8 > $1 / 4 + 1 || $8 - $7 > $1 / 4 + 1) why = why " page " $1; w = $6; m = $7; f = $13' \
    paged.tsv
check "paged: the empty rows are the reserved bytes not used; one 100-token request wastes ceil(100/P)P - 100" \
    'if (($12 - $11) * $3 != $6 * $11 || $13 != int((100 + $1 - 1) / $1) * $1 - 100 || (NR == 2 && $12 != $11)) why = why " page " $1' \
    paged.tsv
header paged.prefix.tsv "page_rows	requests	prefix_rows	rows_per_request	pages_mapped	pages_used	pages_saved	prefix_hits	pages_shared	full_prefix_pages	bytes_unshared	bytes_reserved	bytes_exact	saved_percent"
shape paged.prefix.tsv 9 14
check "paged.prefix: pages saved = prefix hits = the shared full pages of the prefix, once per request after the first" \
    'fp = int($3 / $1); if ($10 != fp || $9 != fp || $8 != ($2 - 1) * fp || $7 != $8 || $6 != $5 - $7 || $5 != $2 * int(($4 + $1 - 1) / $1)) why = why " page " $1' \
    paged.prefix.tsv
check "paged.prefix: sharing holds less than no sharing, never less than the rows themselves (equal at page 1)" \
    'if ($12 > $11 || $12 < $13 || ($7 > 0 && $12 >= $11) || ($1 == 1 && $12 != $13) || (NR > 2 && $7 > s)) why = why " page " $1; s = $7' \
    paged.prefix.tsv

header beam.tsv "width	steps	forks	self_closed_form_bytes	cross_bytes	contiguous_peak_bytes	contiguous_last_bytes	contiguous_reserved_peak_bytes	contiguous_copied_bytes	contiguous_cow_pages	contiguous_shared_pages_peak	paged16_peak_bytes	paged16_last_bytes	paged16_reserved_peak_bytes	paged16_copied_bytes	paged16_cow_pages	paged16_shared_pages_peak	paged4_peak_bytes	paged4_last_bytes	paged4_reserved_peak_bytes	paged4_copied_bytes	paged4_cow_pages	paged4_shared_pages_peak	same_beams"
shape beam.tsv 3 24
check "beam: widths 1, 2, 4 (quick); every cache finds the same beams; one cross cache whatever the width" \
    'if ($1 != 2 ^ (NR - 2) || $24 != 1 || $2 < 1 || $2 > 20 || $5 != 1228800) why = why " width " $1' beam.tsv
check "beam: memory with copy-on-write <= without, within the closed form, and growing with the width" \
    'if ($12 > $6 || $18 > $6 || $6 > $4 || (NR > 2 && ($6 <= c || $12 <= p16 || $18 <= p4))) why = why " width " $1; c = $6; p16 = $12; p4 = $18' \
    beam.tsv

# streaming: kjv-base with a context of 64 standing in for its own (--quick),
# 4x that streamed after a prefill of 64: the first prediction, where every
# cache holds the whole prefill, is the same for all and for the recomputed
# window (the first token and the rest, uncached), within rounding; then 24
# bins of 8, every value a number
header streaming.tsv "position	full_log_ppl	window_log_ppl	sinks4_log_ppl	shift0_log_ppl	shift4_log_ppl	recompute_log_ppl	trained_context"
shape streaming.tsv 25 8
check "streaming: the first prediction alike in every cache and the recomputed window (within 1e-3); bins of 8 after it" \
    'if (NR == 2) { if ($1 != 64) why = why " first at " $1; for (i = 3; i <= 7; i++) if (($i - $2) ^ 2 > 1e-6) why = why " col " i } else if ($1 != 64 + 8 * (NR - 3) + 3) why = why " row " NR - 1 " at " $1; for (i = 2; i <= 7; i++) if ($i !~ /^[0-9.]+$/) why = why " row " NR - 1 " col " i; if ($8 != 64) why = why " context " $8' \
    streaming.tsv

# kv-formats: 25 K x V cells; a cell's bytes depend on its two formats only
# (K in f16 and V in q4_0 take what K in q4_0 and V in f16 take); f16 on both
# sides barely moves the distribution
header kv-formats.tsv "k_format	v_format	k_index	v_index	kl_nats	bits_per_byte	top1_agree	cache_bytes	kl_lo	kl_hi"
shape kv-formats.tsv 25 10
check "kv-formats: bytes symmetric in K and V, KL >= 0, f16/f16 within 1e-5 nats of f32" \
    'b[$3, $4] = $8; if ($5 < 0 || ($1 == "f16" && $2 == "f16" && $5 > 1e-5)) why = why " " $1 "/" $2 } END { for (k = 0; k < 5; k++) for (v = 0; v < 5; v++) if (b[k, v] != b[v, k]) why = why " bytes " k "," v; if (NR != 26) why = why " rows"' \
    kv-formats.tsv
header kv-formats.kivi.tsv "label	keys	key_bits	kl_nats	bits_per_byte	top1_agree	cache_bytes	kl_lo	kl_hi"
shape kv-formats.kivi.tsv 4 9
check "kv-formats: each KL inside its 95% interval" 'if (!($9 <= $5 && $5 <= $10)) why = why " " $1 "/" $2' kv-formats.tsv
check "kv-formats: each KIVI KL inside its 95% interval" 'if (!($8 <= $4 && $4 <= $9)) why = why " " $1' \
    kv-formats.kivi.tsv

# budget: 3 budgets with --quick; one exact reference for all
header budget.tsv "budget	window_kl	window_bits_per_byte	window_top1	sinks4_kl	sinks4_bits_per_byte	sinks4_top1	h2o_kl	h2o_bits_per_byte	h2o_top1	sparse_kl	sparse_bits_per_byte	sparse_top1	full_bits_per_byte	window_kl_lo	window_kl_hi	window_bits_per_byte_lo	window_bits_per_byte_hi	window_vs_exact	window_vs_exact_lo	window_vs_exact_hi	sinks4_kl_lo	sinks4_kl_hi	sinks4_bits_per_byte_lo	sinks4_bits_per_byte_hi	sinks4_vs_exact	sinks4_vs_exact_lo	sinks4_vs_exact_hi	h2o_kl_lo	h2o_kl_hi	h2o_bits_per_byte_lo	h2o_bits_per_byte_hi	h2o_vs_exact	h2o_vs_exact_lo	h2o_vs_exact_hi	sparse_kl_lo	sparse_kl_hi	sparse_bits_per_byte_lo	sparse_bits_per_byte_hi	sparse_vs_exact	sparse_vs_exact_lo	sparse_vs_exact_hi	full_bits_per_byte_lo	full_bits_per_byte_hi"
shape budget.tsv 3 44
check "budget: budgets 16, 32, 64; KL > 0 and top-1 agreement in (0, 1] for every policy; one reference" \
    'if ($1 != 2 ^ (NR + 2) || (NR > 2 && $14 != f)) why = why " budget " $1; f = $14; for (i = 2; i <= 11; i += 3) if ($i <= 0 || $(i + 2) <= 0 || $(i + 2) > 1) why = why " col " i' \
    budget.tsv
check "budget: each KL, bits per byte and difference from the exact cache inside its 95% interval" \
    'for (p = 0; p < 4; p++) { k = 15 + 7 * p; if (!($k <= $(2 + 3 * p) && $(2 + 3 * p) <= $(k + 1) && $(k + 2) <= $(3 + 3 * p) && $(3 + 3 * p) <= $(k + 3) && $(k + 5) <= $(k + 4) && $(k + 4) <= $(k + 6) && $(k + 4) - ($(3 + 3 * p) - $14) < 2e-5 && ($(3 + 3 * p) - $14) - $(k + 4) < 2e-5)) why = why " budget " $1 " policy " p } if (!($43 <= $14 && $14 <= $44)) why = why " full"' \
    budget.tsv

# mixed: hot windows 0, 16, 32 with --quick; more f16 rows hold more bytes, a
# q8_0 past more than a q4_0 one, f32 twice f16
header mixed.tsv "hot_rows	q8_0_kl	q8_0_bits_per_byte	q8_0_cache_bytes	q4_0_kl	q4_0_bits_per_byte	q4_0_cache_bytes	f16_kl	f16_cache_bytes	f32_cache_bytes	q8_0_kl_lo	q8_0_kl_hi	q4_0_kl_lo	q4_0_kl_hi	f16_kl_lo	f16_kl_hi"
shape mixed.tsv 3 16
check "mixed: bytes grow with the hot window, q8_0 above q4_0, f32 = 2 x f16; KL >= 0" \
    'if ((NR > 2 && ($4 <= b8 || $7 <= b4)) || $4 <= $7 || $10 != 2 * $9 || $2 < 0 || $5 < 0) why = why " hot " $1; b8 = $4; b4 = $7' \
    mixed.tsv
check "mixed: each KL inside its 95% interval" \
    'if (!($11 <= $2 && $2 <= $12 && $13 <= $5 && $5 <= $14 && $15 <= $8 && $8 <= $16)) why = why " hot " $1' mixed.tsv

# retrieval: distances 16 and 128 with --quick, one fact; at 16 every cache
# holds the name, at 128 the window and the sinks hold none of it (the window
# then gains less than half what the exact cache gains: what it keeps was
# computed while the name was in view, so not nothing), H2O some; the
# lossless-in-rows caches all. Every document holds kjv-base's first token
# once, at position 0, though its parts are encoded apart
header retrieval.tsv "distance	exact_held	exact_answer_bits	exact_gain_bits	window_held	window_answer_bits	window_gain_bits	sinks4_held	sinks4_answer_bits	sinks4_gain_bits	h2o_held	h2o_answer_bits	h2o_gain_bits	sparse_held	sparse_answer_bits	sparse_gain_bits	q4_0_held	q4_0_answer_bits	q4_0_gain_bits	kivi2_held	kivi2_answer_bits	kivi2_gain_bits	exact_gain_lo	exact_gain_hi	exact_vs_exact_lo	exact_vs_exact_hi	window_gain_lo	window_gain_hi	window_vs_exact_lo	window_vs_exact_hi	sinks4_gain_lo	sinks4_gain_hi	sinks4_vs_exact_lo	sinks4_vs_exact_hi	h2o_gain_lo	h2o_gain_hi	h2o_vs_exact_lo	h2o_vs_exact_hi	sparse_gain_lo	sparse_gain_hi	sparse_vs_exact_lo	sparse_vs_exact_hi	q4_0_gain_lo	q4_0_gain_hi	q4_0_vs_exact_lo	q4_0_vs_exact_hi	kivi2_gain_lo	kivi2_gain_hi	kivi2_vs_exact_lo	kivi2_vs_exact_hi	first_token_ok"
shape retrieval.tsv 2 51
check "retrieval: all held at 16; at 128 window and sinks hold nothing, the window gains under half the exact cache's; exact, q4_0, kivi hold all; one first token, at 0" \
    'if ($2 != 1 || $17 != 1 || $20 != 1 || $3 <= 0) why = why " d " $1; for (i = 5; i <= 14; i += 3) if (($1 == 16 && $i != 1) || ($1 == 128 && (i == 5 || i == 8 || i == 14) && $i != 0) || $i < 0 || $i > 1) why = why " d " $1 " col " i; if ($1 == 128 && ($7 > $4 / 2 || $4 <= 0)) why = why " window gain " $7 " exact " $4; if ($51 != 1) why = why " first token " $51' \
    retrieval.tsv
check "retrieval: each mean gain inside its interval over the facts; the exact cache against itself 0" \
    'for (c = 0; c < 7; c++) { k = 23 + 4 * c; g = 4 + 3 * c; if (!($k <= $g && $g <= $(k + 1) && $(k + 2) <= $(k + 3))) why = why " d " $1 " cache " c } if ($25 != 0 || $26 != 0) why = why " exact"' \
    retrieval.tsv

# roofline: tiny, f16 and q4_0, prompts of 4 and 16 with --quick; prefill right
# of decode, a batch of 4 right of 1, q4_0 moves fewer bytes than f16; the GPU
# panel's bound and the crossover batch recomputed from the counts in the data
header roofline.tsv "$(printf 'model\tcache\tphase\tlength\tbatch\tflops\tbytes\tseconds\tflop_per_byte\tflop_per_s\tcpu_attainable\tgpu_attainable\tfrom_cache')"
if python3 - "$A" <<'PY'
import csv, math, sys
d = sys.argv[1]
rows = list(csv.DictReader(open(d + "/roofline.tsv"), delimiter="\t"))
cross = list(csv.DictReader(open(d + "/roofline.crossover.tsv"), delimiter="\t"))
assert len(rows) == 12 and len(cross) == 4, (len(rows), len(cross))
def get(cache, phase, length, batch):
    return [r for r in rows if (r["cache"], r["phase"], r["length"], r["batch"]) == (cache, phase, str(length), str(batch))][0]
for cache in ("f16", "q4_0"):
    for n in (4, 16):
        p, d1, d4 = get(cache, "prefill", n, 1), get(cache, "decode", n, 1), get(cache, "decode", n, 4)
        assert float(p["flop_per_byte"]) > float(d1["flop_per_byte"]) < float(d4["flop_per_byte"]), (p, d1, d4)
        assert int(get("q4_0", "decode", n, 1)["bytes"]) < int(get("f16", "decode", n, 1)["bytes"])
for r in rows:
    i = float(r["flop_per_byte"])
    assert abs(i - int(r["flops"]) / int(r["bytes"])) <= 1e-5 * i, r
    assert abs(float(r["gpu_attainable"]) - min(3.35e12 * i, 1979e12 / 2)) <= 1e-5 * float(r["gpu_attainable"]), r
for c in cross:
    f, w, k, ridge = (float(c[x]) for x in ("flops_per_seq", "weight_bytes", "kv_bytes_per_seq", "gpu_ridge"))
    assert abs(ridge - 989.5e12 / 3.35e12) < 1e-3, ridge
    want = ridge * w / (f - ridge * k) if f > ridge * k else math.inf
    got = float(c["gpu_batch"])
    assert (math.isinf(want) and math.isinf(got)) or abs(got - want) <= 1e-5 * want, (c, want)
labels = open(d + "/roofline.labels.gp").read()
assert "NVIDIA H100 SXM" in labels and "nvidia.com/en-us/data-center/h100" in labels and "cross_text" in labels
PY
then ok "roofline: prefill right of decode, batch 4 right of 1, q4_0 fewer bytes; H100 bound and crossover recomputed"
else bad "roofline: prefill right of decode, batch 4 right of 1, q4_0 fewer bytes; H100 bound and crossover recomputed"; fi

# serve: rates 0.5 and 2 with --quick; pages of 1, 16, 128 and a whole context
# each; the whole-context pages run fewest tokens a step once the pool binds
# (rate 2) and hold the least of the pool; the shares are shares; a longer
# shared prefix maps more rows from the prefix cache
header serve.tsv "rate	page1_tokens_per_step	page1_pool_share	page1_preemptions	page16_tokens_per_step	page16_pool_share	page16_preemptions	page128_tokens_per_step	page128_pool_share	page128_preemptions	whole_tokens_per_step	whole_pool_share	whole_preemptions"
shape serve.tsv 2 13
check "serve: at rate 2 whole-context pages run fewest tokens a step and hold the least; every share in (0, 1]" \
    'for (i = 3; i <= 12; i += 3) if ($i <= 0 || $i > 1) why = why " rate " $1 " col " i; if ($1 == 2 && ($11 >= $8 || $11 >= $5 || $11 >= $2 || $12 >= $3)) why = why " whole not last"' \
    serve.tsv
header serve.prefix.tsv "shared_prefix	hit_rows	prompt_tokens	hit_share"
shape serve.prefix.tsv 2 4
check "serve.prefix: a shared prefix of 32 maps more rows than none" \
    'if (NR == 3 && $2 <= h) why = "no more hits at " $1; h = $2' serve.prefix.tsv

# prefix-cache: pools of 24 and 48 pages with --quick; block and radix on
# chat and few-shot. Hit rates are shares; the few-shot preambles (40
# tokens, pages of 16) give the tree 8 tokens more than the hash's 2 full
# pages wherever a preamble is met again, so radix hits more; the bigger
# pool evicts no more than the smaller
header prefix-cache.tsv "pool_pages	chat_block_hit_rate	chat_block_steps	chat_block_evicted	chat_block_held	chat_radix_hit_rate	chat_radix_steps	chat_radix_evicted	chat_radix_held	fewshot_block_hit_rate	fewshot_block_steps	fewshot_block_evicted	fewshot_block_held	fewshot_radix_hit_rate	fewshot_radix_steps	fewshot_radix_evicted	fewshot_radix_held"
shape prefix-cache.tsv 2 17
check "prefix-cache: hit rates in [0, 1], few-shot radix above block, fewer evictions in the bigger pool" \
    'for (i = 2; i <= 17; i += 4) if ($i < 0 || $i > 1) why = why " pool " $1 " col " i; if ($14 <= $10) why = why " fewshot radix not above block at " $1; if (NR == 3 && ($8 > e8 || $16 > e16)) why = why " more evictions at " $1; e8 = $8; e16 = $16' \
    prefix-cache.tsv

# speculative: K = 1, 2, 4 with --quick, kjv-tiny drafting for kjv-small on
# held-out prompts. Greedy, every run's tokens are the target's alone; the
# counts agree with each other: a round judges its proposals up to the first
# refused, so at K = 1 every proposal is judged (kept / judged = kept /
# drafted); a pass yields 1 .. K + 1 tokens; the kept count at each place in
# the draft never rises (a proposal is kept only after all before it)
header speculative.tsv "k	prompts	generated	verify_passes	drafted	accepted	refused	accept_rate	agree_rate	tokens_per_pass	tokens_per_pass_iid	target_rolled	draft_rolled	spec_flops	alone_flops	flop_ratio	spec_weight_bytes	alone_weight_bytes	weight_byte_ratio	spec_seconds	alone_seconds	speedup	same_tokens"
shape speculative.tsv 3 23
check "speculative: same tokens as the target alone; shares and tokens a pass follow from the counts" \
    'split("1 2 4", ks, " "); if ($1 != ks[NR - 1] || $23 != 1 || $6 > $5 || $6 + $7 > $5 || ($8 - $6 / $5) ^ 2 > 1e-7 || ($9 - $6 / ($6 + $7)) ^ 2 > 1e-7 || ($10 - ($3 - $2) / $4) ^ 2 > 1e-7 || $10 < 1 || $10 > $1 + 1 || ($1 == 1 && ($8 != $9 || $7 + $6 != $5)) || $15 != a && NR > 2) why = why " K " $1; a = $15' \
    speculative.tsv
header speculative.position.tsv "position	proposed	accepted	accept_rate"
shape speculative.position.tsv 4 4
check "speculative.position: at K = 4, kept counts never rise along the draft, and never pass the proposals" \
    'if ($1 != NR - 1 || $3 > $2 || (NR > 2 && ($3 > k || $2 > p))) why = why " place " $1; k = $3; p = $2' \
    speculative.position.tsv

# loss: the shipped training logs, row for row; the mean is of the last 25 steps
header loss.tsv "tokens	step	train_bits_per_byte	train_bits_per_byte_mean25	valid_bits_per_byte"
for pair in "loss.tsv kjv-small" "loss.kjv-tiny.tsv kjv-tiny" "loss.kjv-base.tsv kjv-base" \
    "loss.kjv-base-sink.tsv kjv-base-sink"; do
    set -- $pair
    said=$(awk -F'\t' 'FNR == 1 { next } NR == FNR { st[FNR] = $1; tb[FNR] = $4; vb[FNR] = $5; tk[FNR] = $7; n = FNR; next }
        { sum += $3; q[FNR] = $3; if (FNR > 26) sum -= q[FNR - 25]; k = FNR - 1 < 25 ? FNR - 1 : 25
          if ($2 != st[FNR] || $1 != tk[FNR] || $3 != tb[FNR] || $5 != vb[FNR] || ($4 - sum / k) ^ 2 > 1e-8) why = why " row " FNR
          m = FNR }
        END { if (m != n || n < 2) why = why " rows " m " of " n; print why ? why : "ok" }' \
        "data/weights/$2.log.tsv" "$A/$1" 2>&1)
    [ "$said" = ok ] && ok "$1: every step of data/weights/$2.log.tsv, the running mean right" || bad "$1: every step of the log" "$said"
done
check "beam: width 1 forks and copies nothing; copy-on-write copies less than forks that copy, and only paged shares" \
    'if (($1 == 1 && ($3 != 0 || $9 != 0 || $15 != 0 || $21 != 0 || $6 != $12 || $6 != $18)) || $15 > $9 || $21 > $9 || $10 != 0 || $11 != 0 || ($1 > 1 && ($16 == 0 || $16 > $3 || $22 > $3 || $9 == 0))) why = why " width " $1' \
    beam.tsv

header mla.tsv "context	absorbed_flops	decompress_lru_flops	decompress_flops	absorbed_closed_form	decompress_closed_form	decompress_lru_rows_up	decompress_rows_up"
shape mla.tsv 256 8
check "mla: measured FLOPs are mla_flops(); decompress up-projects every row of the 2 layers at every step" \
    'if ($1 != NR - 1 || $2 != $5 || $4 != $6 || $8 != 2 * $1) why = why " context " $1' mla.tsv
check "mla: FLOPs grow with context on every path; the tile LRU saves up-projections while its 4 x 64 rows hold 2 layers" \
    'if ((NR > 2 && ($2 <= a || $3 < l || $4 <= d)) || $3 > $4 || $7 > $8 || ($1 <= 128 && $7 != 2) || ($1 > 130 && $3 != $4)) why = why " context " $1; a = $2; l = $3; d = $4' \
    mla.tsv
header mla.bytes.tsv "label	kind	layers	values_per_token_layer	bytes_per_token_f16	bytes_per_token_f32	mha_bytes_per_token_f16"
shape mla.bytes.tsv 7 7
check "mla.bytes: f16 is 2 B a value, f32 twice that; MHA > GQA > MQA; every MLA latent below its MHA" \
    'k[NR - 1] = $2; b[NR - 1] = $5; if ($5 != 2 * $3 * $4 || $6 != 2 * $5 || $5 > $7 || ($2 ~ /^(GQA|MQA|MLA)$/ && $5 >= $7)) why = why " row " NR - 1 } END { if (!(k[1] == "MHA" && k[2] == "GQA" && k[3] == "MQA" && b[1] > b[2] && b[2] > b[3])) why = why " order"' \
    mla.bytes.tsv
m=$(sed -n 's/^measured_bytes = //p' "$A/mla.labels.gp" 2>/dev/null)
f=$(sed -n 's/^formula_bytes = //p' "$A/mla.labels.gp" 2>/dev/null)
[ -n "$m" ] && [ "$m" -gt 0 ] && [ "$m" = "$f" ] && ok "mla: the latent cache held memory.h's $f B per token" ||
    bad "mla: the latent cache held memory.h's bytes per token" "measured '$m', memory.h '$f'"

ev_header="workload	structure	policy	cache	prefill_chunk	budget_rows	rows_after_prefill	rows_decode_min	rows_decode_max	rows_reserved	mass_kept_min	attn_err_max	logit_err_max	first_divergence	steps	workload_index	policy_index"
# the rows each policy holds at budget B ($6): ring and h2o exactly B after a decode step, the ring B + 15 after
# the 16-token prefill chunks; block-sparse whole pages of B/4 rows, the newest filling; snapkv B after the
# prefill, then every generated row (B + 1 .. B + 15); every run 16 steps
ev_rows='split("window window+sinks h2o block-sparse snapkv", pol, " "); if ($3 != pol[$17 + 1] || $5 != 16 || $15 != 16 || $14 > $15 || $11 < 0 || $11 > 1 + 1e-6 || $12 < 0 || $13 < 0 || ($17 < 3 && ($8 != $6 || $9 != $6)) || ($17 < 2 && $7 != ($6 < 256 ? $6 + 15 : 256)) || ($17 == 2 && $7 != $6) || ($17 == 3 && ($8 <= $6 * 3 / 4 || $9 > $6 + 1 || $10 != $6)) || ($17 == 4 && ($7 != $6 || $8 != $6 + 1 || $9 != $6 + 15))) why = why " " $1 "/" $3 "@" $6'
header eviction.tsv "$ev_header"
shape eviction.tsv 25 17
check "eviction: 5 workloads x 5 policies at 64 rows; each holds its budget (measured), 16 steps measured" \
    "split(\"none sink local heavy retrieval\", wl, \" \"); if (\$1 != wl[\$16 + 1] || \$6 != 64 || \$16 != int((NR - 2) / 5) || \$17 != (NR - 2) % 5) why = why \" row \" NR - 1; $ev_rows" \
    eviction.tsv
check "eviction: retrieval at 64 rows: the needle (position 40, not a sink) is gone for every policy (mass < 0.1)" \
    'if ($1 == "retrieval" && $11 >= 0.1) why = why " " $3' eviction.tsv
check "eviction: heavy hitters: h2o and snapkv, which choose by attention, keep more mass than the windows and block-sparse; local: a window keeps most of it (> 0.8)" \
    'if ($1 == "heavy") m[$17] = $11; if ($1 == "local" && $17 == 0 && $11 <= 0.8) why = "local window " $11 } END { for (p = 2; p <= 4; p += 2) if (!(m[p] > m[0] && m[p] > m[1] && m[p] > m[3])) why = why " heavy: " p " " m[p]' \
    eviction.tsv
header eviction.budget.tsv "$ev_header"
shape eviction.budget.tsv 50 17
check "eviction.budget: retrieval and heavy, each policy at 16 .. 256 rows; each holds its budget" \
    "if (\$1 != (NR <= 26 ? \"retrieval\" : \"heavy\") || \$6 != 2 ^ ((NR - 2) % 5 + 4) || \$17 != int((NR - 2) / 5) % 5) why = why \" row \" NR - 1; $ev_rows" \
    eviction.budget.tsv
check "eviction.budget: retrieval at 128 rows: h2o keeps the needle (mass > 0.5), window, sinks, block-sparse and snapkv (its window votes before the question) do not (< 0.1)" \
    'if ($1 == "retrieval" && $6 == 128 && (($17 == 2 && $11 <= 0.5) || ($17 != 2 && $11 >= 0.1))) why = why " " $3' \
    eviction.budget.tsv
check "eviction.budget: more rows never keep less attention mass" \
    'if ($6 > 16 && $11 < prev - 1e-6) why = why " " $1 "/" $3 "@" $6; prev = $11' eviction.budget.tsv

# --- gnuplot: kvscope drew every figure; each script renders cleanly --------
if command -v gnuplot >/dev/null 2>&1; then
    figures=$(for gp in plots/*.gp; do basename "$gp" .gp; done)
    missing=""
    for n in $figures; do
        for ext in png svg; do [ -s "$A/$n.$ext" ] || missing="$missing $n.$ext"; done
    done
    [ -z "$missing" ] && ok "plot drew every figure as png and svg" || bad "plot drew every figure as png and svg" \
        "missing:$missing"
    for n in $figures; do
        for term in png svg; do
            gnuplot -c "plots/$n.gp" "$A/$n.tsv" "$plot_tmp/$n.$term" "$term" >"$out" 2>"$err"
            st=$?
            magic=$(head -c 4 "$plot_tmp/$n.$term" 2>/dev/null | od -An -c | tr -d ' ')
            if [ "$st" -eq 0 ] && [ ! -s "$err" ] && { [ "$term" = svg ] && grep -q '</svg>' "$plot_tmp/$n.$term" ||
                [ "$magic" = '211PNG' ]; }
            then ok "plots/$n.gp renders $term (pngcairo for png), gnuplot silent"
            else bad "plots/$n.gp renders $term (pngcairo for png), gnuplot silent" "exit $st, magic '$magic'" \
                "gnuplot stderr: $(head -c 400 "$err")"; fi
        done
    done
    run "plot --term dumb" $KV plot projection --term dumb --out "$plot_tmp/dumb"
    if [ "$status" -eq 0 ] && [ ! -s "$err" ] && grep -q 'slope 1\.000' "$out" && grep -q 'tokens generated' "$out" &&
        [ ! -e "$plot_tmp/dumb/projection.png" ]
    then ok "plot --term dumb draws in the terminal, writes no image"
    else bad "plot --term dumb draws in the terminal, writes no image" "exit $status" \
        "stderr: $(head -c 300 "$err")"; fi
else
    ok "gnuplot is not installed: rendering checks skipped (sudo apt-get install gnuplot-nox)"
fi

# --- without gnuplot: data and scripts, the install hint; same seed, same
# bytes, on one thread here as on every CPU in A
B=$plot_tmp/b
run "plot without gnuplot" env PATH=/nonexistent "$KV" plot projection attention-flops memory quant-error paged \
    eviction beam mla streaming kv-formats budget mixed retrieval --quick --seed 3 --threads 1 --out "$B"
if [ "$status" -eq 0 ] && grep -q 'sudo apt-get install gnuplot-nox' "$out" && [ -s "$B/memory.gp" ] &&
    [ -s "$B/memory.tsv" ] && [ -s "$B/memory.labels.gp" ] && [ ! -e "$B/memory.png" ]
then ok "without gnuplot: data, labels and scripts written, the message says how to install it"
else bad "without gnuplot: data, labels and scripts written, the message says how to install it" "exit $status" \
    "stdout: $(head -c 400 "$out")" "stderr: $(head -c 300 "$err")"; fi
differ=""
for f in projection.tsv projection.fits.tsv attention-flops.tsv attention-flops.fits.tsv memory.tsv \
    memory.formats.tsv quant-error.tsv quant-error.hist.tsv paged.tsv paged.prefix.tsv eviction.tsv \
    eviction.budget.tsv beam.tsv mla.tsv mla.bytes.tsv streaming.tsv kv-formats.tsv kv-formats.kivi.tsv budget.tsv \
    mixed.tsv retrieval.tsv; do
    cmp -s "$A/$f" "$B/$f" || differ="$differ $f"
done
[ -z "$differ" ] && ok "same seed, byte-identical data files (timings aside), on 1 thread and on every CPU" ||
    bad "same seed, byte-identical data files (timings aside), on 1 thread and on every CPU" "differ:$differ"
run "plot another seed" env PATH=/nonexistent "$KV" plot quant-error --seed 4 --out "$plot_tmp/c"
cmp -s "$A/quant-error.tsv" "$plot_tmp/c/quant-error.tsv" && bad "another seed gives other synthetic data" \
    "quant-error.tsv is the same for seeds 3 and 4" || ok "another seed gives other synthetic data"

# --- bad input: one line, exit 2 ---------------------------------------------
: >"$plot_tmp/afile"
expect_fail "plot: unknown figure" 2 "unknown figure 'nope' \(figures: projection, " $KV plot nope --out "$plot_tmp/x"
expect_fail "plot: bad --term" 2 "--term: 'jpeg' is not one of png, svg, dumb" $KV plot memory --term jpeg
expect_fail "plot: --out is a file" 2 "--out .*afile: exists and is not a directory" $KV plot memory --out "$plot_tmp/afile"
expect_fail "plot: --out under a file" 1 "--out .*: cannot create" $KV plot memory --out "$plot_tmp/afile/plots"
expect_fail "plot: nothing named" 2 "name the figures to make, or --all" $KV plot
expect_fail "plot: --tokens beyond the model" 2 "--tokens 300: model 'tiny' holds 256 positions" \
    $KV plot projection --tokens 300 --out "$plot_tmp/x"
expect_fail "plot: unknown option" 2 "unknown or incomplete option '--colour'" $KV plot --colour
# a script that draws nothing (here: empty) must not pass for a figure
mkdir -p "$plot_tmp/emptygp" && : >"$plot_tmp/emptygp/retrieval.gp"
run "plot: a script that draws nothing" env KVSCOPE_PLOTS="$plot_tmp/emptygp" $KV plot retrieval --quick \
    --out "$plot_tmp/emptyout"
if [ "$status" -eq 1 ] && grep -q "gnuplot drew nothing into retrieval.png" "$err" &&
    [ ! -e "$plot_tmp/emptyout/retrieval.png" ]; then ok "$name"
else bad "$name" "want: exit 1 and 'gnuplot drew nothing'" "got: exit $status: $(head -c 300 "$err")"; fi
rm -rf "$plot_tmp"
unset KVSCOPE_PLOTS
