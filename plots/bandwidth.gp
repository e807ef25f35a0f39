# bandwidth.gp: figure 5 of `kvscope plot`: the time of one decode step of
# attention, per stored format, in the flash and naive forms, beside the
# time that reading the step's K and V bytes at the read bandwidth measured
# in the same run would take (the floor memory sets).
#
# usage: gnuplot -c bandwidth.gp bandwidth.tsv OUT TERM
#   bandwidth.tsv  kvscope's data (bandwidth.labels.gp beside it); measured:
#                  different every run and on every machine
#   OUT            the image file, or - for the terminal
#   TERM           png (default), svg or dumb
#
# How to read it: lower is faster. A bar near its format's floor is limited
# by memory; far above it, by computation (dequantizing small formats costs
# instructions per byte). The labels give the step's bytes over its time as
# a share of the read bandwidth.

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
load data[1:strlen(data) - 4] . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1200,800 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1200,800 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 120,40 noenhanced
} else {
    exit error "bandwidth.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
set title title font ",14"
set label 101 caption at screen 0.01, screen 0.1 left font ",9"
set bmargin 12
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics lc rgb "#dddddd"
set xlabel "format of the stored K and V rows (bits per value, scales included)" offset 0,-0.5
set ylabel "time of one decode step (microseconds; lower is faster)"
set yrange [0:*]
set offsets 0, 0, graph 0.15, 0
stats data using 4 nooutput
set xrange [-0.6:STATS_records - 0.4]
set key top right box opaque samplen 2 spacing 1.2

set style textbox opaque noborder
set linetype 1 lc rgb "#0072B2"
set linetype 2 lc rgb "#E69F00"
us = 1e6

plot data using ($4 * us):xtic(sprintf("%s\n%g bits", strcol(1), column(2))) lt 1 \
        title sprintf("flash: tiles of %d rows, dequantized in registers", tile_rows), \
     data using ($6 * us) lt 2 title "naive: all scores, softmax, then V", \
     data using ($0):($3 / ($8 * 1e9) * us):(0.45) with xerrorbars lc rgb "black" lw 2 pt 0 \
        title sprintf("reading the step's bytes at %.1f GB/s, this machine's read bandwidth", bandwidth_gbps), \
     data using ($0 - 1 / 6.0):($4 * us):(sprintf("%.0f%%", 100 * $5 / $8)) with labels boxed offset 0,0.8 font ",9" notitle, \
     data using ($0 + 1 / 6.0):($6 * us):(sprintf("%.0f%%", 100 * $7 / $8)) with labels boxed offset 0,0.8 font ",9" notitle
