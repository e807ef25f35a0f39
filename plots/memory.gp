# memory.gp: figure 4 of `kvscope plot`: KV cache memory, from the model
# configs alone. Left: the whole cache (batch 1, f16) against the context
# length, one line per cache shape. Right: what one token costs in every
# format, one bar per shape (same colours as the left).
#
# usage: gnuplot -c memory.gp memory.tsv OUT TERM
#   memory.tsv  kvscope's data: context, then bytes per shape (a column each);
#               memory.formats.tsv (format, then bytes per token per shape)
#               and memory.labels.gp sit beside it
#   OUT         the image file, or - for the terminal
#   TERM        png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
formats = base . ".formats.tsv"
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1600,850 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1600,850 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,90 noenhanced
} else {
    exit error "memory.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
GiB = 2.0 ** 30
KiB = 2.0 ** 10
# one colour per shape (column), the same in both panels
set linetype 1 lc rgb "#D55E00" lw 2 pt 7
set linetype 2 lc rgb "#0072B2" lw 2 pt 5
set linetype 3 lc rgb "#56B4E9" lw 2 pt 9
set linetype 4 lc rgb "#009E73" lw 2 pt 11 dt 2
set linetype 5 lc rgb "#CC79A7" lw 2 pt 13
set linetype 6 lc rgb "#8B4513" lw 2 pt 6
set linetype 7 lc rgb "#E69F00" lw 2 pt 4
stats data using 1 nooutput
n_series = STATS_columns - 1

# side by side in an image; one above the other in a terminal, where width is short
if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.075 left font ",9"
set bmargin 10

# left: memory vs context
set logscale xy 2
set format x "%.0f"
set format y "%g"
set xtics rotate by -30
set logscale y 10
set grid xtics ytics mytics lc rgb "#dddddd"
set xlabel "context length (tokens)"
set ylabel "KV cache, whole model, batch 1, " . curve_format . " (GiB)"
set yrange [*:1e4]   # two decades of room at the top for the key
set title "(a) the whole cache against the context (" . curve_format . ")"
set key top left box opaque samplen 3 spacing 1.1 font ",9"
plot for [i = 2:n_series + 1] data using 1:(column(i) / GiB) with linespoints lt (i - 1) title columnhead(i)

# right: bytes per token by format
unset label 101
unset logscale x
set logscale y 10
set xtics norotate
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set xlabel "format of the stored K and V (MLA: of the latent row)"
set ylabel "bytes per token, all layers (KiB)"
set grid noxtics ytics mytics
set yrange [1:*]
set linetype 4 dt solid   # mistral-7b: dashed on the left, where it overlays llama-3-8b
set title "(b) one token in every format (colours as in (a))"
unset key
plot for [i = 2:n_series + 1] formats using (column(i) / KiB):xtic(1) lt (i - 1) title columnhead(i)
unset multiplot
