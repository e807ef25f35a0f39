# kv-formats.gp: figure 13 of `kvscope plot`: K and V stored in formats
# chosen separately (llama.cpp's -ctk / -ctv), judged by how far the trained
# model's next-token distributions move from the f32 cache's on held-out
# text. Left: the K x V grid, coloured by the KL divergence (log scale),
# each cell's KL written in it. Right: KIVI's per-channel keys against
# per-token keys at the same bits.
#
# usage: gnuplot -c kv-formats.gp kv-formats.tsv OUT TERM
#   kv-formats.tsv  kvscope's data: one row per K format x V format;
#                   kv-formats.kivi.tsv and kv-formats.labels.gp sit beside it
#   OUT             the image file, or - for the terminal
#   TERM            png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
load base . ".labels.gp"
kivi = base . ".kivi.tsv"

if (term eq "png") {
    set terminal pngcairo size 1600,850 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1600,850 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,80 noenhanced
} else {
    exit error "kv-formats.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders

if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.085 left font ",9"
set bmargin 11

# left: the grid (K down, V across), log10 of the KL in colour
set title "(a) KL(f32 || cache), nats a token, x 1000 in each cell, its 95% interval below"
set xlabel "V format"
set ylabel "K format"
set xrange [-0.5:n_formats - 0.5]
set yrange [n_formats - 0.5:-0.5]
set xtics ("f16" 0, "q8_0" 1, "q4_0" 2, "int4" 3, "fp4" 4)
set ytics ("f16" 0, "q8_0" 1, "q4_0" 2, "int4" 3, "fp4" 4)
set cblabel "log10 KL"
set palette defined (0 "#f7fbff", 0.5 "#6baed6", 1 "#08306b")
set cbrange [-8:-2]
set size ratio -1
plot data using 4:3:(log10(column("kl_nats") > 1e-8 ? column("kl_nats") : 1e-8)) with image notitle, \
     data using 4:3:(sprintf("%.3f", 1000 * column("kl_nats"))) with labels offset 0,0.6 font ",10" tc rgb "#d95f02" \
         notitle, \
     data using 4:3:(sprintf("[%.3f, %.3f]", 1000 * column("kl_lo"), 1000 * column("kl_hi"))) \
         with labels offset 0,-0.6 font ",8" tc rgb "#d95f02" notitle
set size noratio
unset label 101
unset colorbox

# right: KIVI per channel against per token, the same value format
set title "(b) 4- and 2-bit keys: per channel (KIVI) or per token; V in q4_0"
set xlabel ""
set ylabel "KL(f32 || cache), nats a token (log scale)"
set xrange [-0.6:3.6]
set yrange [*:*] noreverse
set autoscale y
set logscale y
set offsets 0, 0, graph 0.1, 0
set xtics ()
set ytics autofreq
set format y "%.0e"
set style fill solid 0.8 border -1
set boxwidth 0.6
set grid ytics lc rgb "#dddddd"
plot kivi using 0:(column("kl_nats")):xtic(1) with boxes lc rgb "#0072B2" notitle, \
     kivi using 0:(column("kl_nats")):(column("kl_lo")):(column("kl_hi")) with yerrorbars lc rgb "#000000" lw 1.5 \
         pt -1 notitle, \
     kivi using 0:(column("kl_hi")):(sprintf("%s, %.0f KiB", strcol(2), column("cache_bytes") / 1024.0)) \
         with labels offset 0,0.8 font ",9" notitle
unset multiplot
