# quant-error.gp: figure 6 of `kvscope plot`: what each stored format costs
# in accuracy. Left: the error of the attention output when K only, V only or
# both are stored in the format (relative to the f32 output). Right: how the
# error of single elements is spread, one curve per format.
#
# usage: gnuplot -c quant-error.gp quant-error.tsv OUT TERM
#   quant-error.tsv  kvscope's data (per format); quant-error.hist.tsv (the
#                    histogram) and quant-error.labels.gp sit beside it
#   OUT              the image file, or - for the terminal
#   TERM             png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
hist = base . ".hist.tsv"
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1600,800 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1600,800 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,90 noenhanced
} else {
    exit error "quant-error.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
nz(v) = v > 0 ? v : NaN   # an exact format has no error to draw on a log axis

# side by side in an image; one above the other in a terminal, where width is short
if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.08 left font ",9"
set bmargin 10

# left: attention output error per format
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set logscale y
set format y "1e%T"
set yrange [1e-6:1]
set grid ytics lc rgb "#dddddd"
set xlabel "format of the stored rows (f32: exact, no error)"
set ylabel "attention output error, ||out - out_f32|| / ||out_f32|| (relative)"
set key top left box opaque samplen 2 spacing 1.2
set title "(a) error of the attention output"
set label 1 "exact" at 0, graph 0.04 center font ",10"
set linetype 1 lc rgb "#0072B2"
set linetype 2 lc rgb "#E69F00"
set linetype 3 lc rgb "#D55E00"
plot data using (nz($6)):xtic(1) lt 1 title "K in the format, V f32", \
     data using (nz($7)) lt 2 title "V in the format, K f32", \
     data using (nz($8)) lt 3 title "K and V in the format"

# right: histogram of element errors
unset label 101
unset label 1
set title "(b) error of single values, dequantized: one histogram per format, stacked so none hides another"
set style data lines
set logscale x
set format x "1e%T"
set xrange [10 ** hist_lo:1]
unset logscale y
# each format on its own baseline, `band` apart; the tics name the formats
band = 40.0
set yrange [0:5 * band]
set ytics ("f16" 0.3 * band, "q8_0" 1.3 * band, "q4_0" 2.3 * band, "int4" 3.3 * band, "fp4" 4.3 * band) scale 0
set y2range [0:5 * band]
set y2tics ("0%%" 0, "20%%" 20, "0%%" band, "20%%" band + 20, "0%%" 2 * band, "20%%" 2 * band + 20, \
            "0%%" 3 * band, "20%%" 3 * band + 20, "0%%" 4 * band, "20%%" 4 * band + 20) font ",8"
set grid xtics lc rgb "#dddddd"
set xlabel "|dequantized - original| of one value (values ~ N(0, 1); first bin: that or less)"
set ylabel ""
set y2label "share of the K and V values (% per quarter decade)"
unset key
set linetype 1 lc rgb "#999999" lw 2
set linetype 2 lc rgb "#009E73" lw 2
set linetype 3 lc rgb "#0072B2" lw 2
set linetype 4 lc rgb "#E69F00" lw 2
set linetype 5 lc rgb "#000000" lw 2
set linetype 6 lc rgb "#CC79A7" lw 2
# columns: from, to, then f32 f16 q8_0 q4_0 int4 fp4 (f32 is all exact: skipped)
do for [i = 4:8] { set arrow i from graph 0, first (i - 4) * band to graph 1, first (i - 4) * band nohead lc rgb "#bbbbbb" }
plot for [i = 4:8] hist using (10 ** (($1 + $2) / 2)):((i - 4) * band + column(i) * 100) with histeps lt (i - 2) notitle
unset multiplot
