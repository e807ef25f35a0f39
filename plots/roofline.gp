# roofline.gp: figure 18 of `kvscope plot`: prefill and decode passes on
# roofline charts (log-log: FLOPs per byte moved across, FLOP/s up; the
# memory roof rises at the bandwidth, the compute roof is flat; they meet
# at the ridge). Left: the passes as measured on this machine, against its
# roofs. Right: the same passes' FLOPs and bytes on a data-center GPU's
# roofs from its data sheet, each where those roofs let it go at best, with
# the batch at which decode would reach the GPU's ridge.
#
# usage: gnuplot -c roofline.gp roofline.tsv OUT TERM
#   roofline.tsv  kvscope's data: one row per pass (model, cache, phase,
#                 length, batch, counts, time, intensity, FLOP/s);
#                 roofline.crossover.tsv and roofline.labels.gp sit beside it
#   OUT           the image file, or - for the terminal
#   TERM          png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
cross = base . ".crossover.tsv"
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1600,900 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1600,900 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,90 noenhanced
} else {
    exit error "roofline.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set linetype 1 lc rgb "#0072B2" lw 2 pt 7 ps 1.4
set linetype 2 lc rgb "#D55E00" lw 2 pt 9 ps 1.5
set linetype 3 lc rgb "#009E73" lw 2 pt 5 ps 1.3
set linetype 4 lc rgb "#000000" lw 2.5
set linetype 5 lc rgb "#777777" lw 1.5 dt 2

if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.15 left font ",9"
set bmargin 15
set logscale xy
set grid xtics ytics mxtics mytics lc rgb "#e4e4e4"
set key bottom right box opaque samplen 2 spacing 1.1 font ",9"
set xlabel "arithmetic intensity: FLOPs per byte moved (weights, K/V read and written)"
set samples 400

is(col, want) = strcol(col) eq want
cpu_roof(x) = (cpu_bw * x < cpu_peak ? cpu_bw * x : cpu_peak) / 1e9
gpu_roof(x) = (gpu_bw * x < gpu_peak ? gpu_bw * x : gpu_peak) / 1e12

# (a) this machine: measured
set title "(a) this machine, measured: prefill right of decode; decode moves right with the batch"
set ylabel "GFLOP/s achieved"
set xrange [0.3:300]
plot cpu_roof(x) with lines lt 4 title sprintf("roofs: %.3g GB/s, %.3g GFLOP/s", cpu_bw / 1e9, cpu_peak / 1e9), \
     data using (is("phase", "prefill") ? column("flop_per_byte") : NaN):(column("flop_per_s") / 1e9) \
         with points lt 1 title "prefill (4 .. 200 tokens)", \
     data using (is("phase", "decode") && column("batch") == 1 ? column("flop_per_byte") : NaN):(column("flop_per_s") / 1e9) \
         with points lt 2 title "decode, batch 1", \
     data using (is("phase", "decode") && column("batch") > 1 ? column("flop_per_byte") : NaN):(column("flop_per_s") / 1e9) \
         with points lt 3 title "decode, batch 4", \
     data using (column("from_cache") > 0 ? column("flop_per_byte") : NaN):(column("flop_per_s") / 1e9) \
         with points pt 6 ps 2.2 lc rgb "#777777" title "above the DRAM roof: from cache"

# (b) the GPU: the same counts, at the roofs' bound
unset label 101
set title sprintf("(b) the same passes on the %s (its data sheet's roofs)", gpu_name)
set ylabel "TFLOP/s at best"
set xrange [0.3:3000]
set label 102 cross_text at graph 0.03, graph 0.95 left front font ",10"
plot gpu_roof(x) with lines lt 4 title sprintf("roofs: %.3g TB/s, %.0f TFLOP/s dense", gpu_bw / 1e12, gpu_peak / 1e12), \
     data using (is("phase", "prefill") ? column("flop_per_byte") : NaN):(column("gpu_attainable") / 1e12) \
         with points lt 1 title "prefill", \
     data using (is("phase", "decode") && column("batch") == 1 ? column("flop_per_byte") : NaN):(column("gpu_attainable") / 1e12) \
         with points lt 2 title "decode, batch 1", \
     data using (is("phase", "decode") && column("batch") > 1 ? column("flop_per_byte") : NaN):(column("gpu_attainable") / 1e12) \
         with points lt 3 title "decode, batch 4"
unset label 102
unset multiplot
