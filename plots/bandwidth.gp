# bandwidth.gp: figure 5 of `kvscope plot`: how fast one decode step of
# attention reads the cache, per stored format, against the read bandwidth
# measured on the same machine in the same run (the dashed line).
#
# usage: gnuplot -c bandwidth.gp bandwidth.tsv OUT TERM
#   bandwidth.tsv  kvscope's data (bandwidth.labels.gp beside it); measured:
#                  different every run and on every machine
#   OUT            the image file, or - for the terminal
#   TERM           png (default), svg or dumb
#
# How to read it: GB/s is the bytes of K and V the step read over its time.
# A bar near the line is limited by memory; far below, by computation (the
# dequantizing of small formats costs instructions per byte).

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
set label 101 caption at screen 0.01, screen 0.085 left font ",9"
set bmargin 11
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics lc rgb "#dddddd"
set xlabel "format of the stored K and V rows (bits per value, scales included)" offset 0,-0.5
set ylabel "bytes of K and V read per second (GB/s, 10^9 B/s)"
set yrange [0:bandwidth_gbps * 1.25]
stats data using 5 nooutput
set xrange [-0.6:STATS_records - 0.4]
# two bars per format: their centres sit 1/6 either side of the format's slot
set key top right box opaque samplen 2 spacing 1.2
set label 2 "labels: % of the read bandwidth" at graph 0.01, graph 0.97 left font ",9"

set style textbox opaque noborder   # a label stays readable where it meets the line
set linetype 1 lc rgb "#0072B2"
set linetype 2 lc rgb "#E69F00"

plot data using 5:xtic(sprintf("%s\n%g bits", strcol(1), column(2))) lt 1 \
        title "flash: 64-row tiles, dequantized in registers", \
     data using 7 lt 2 title "naive: all scores, softmax, then V", \
     bandwidth_gbps with lines lc rgb "black" dt 2 lw 2 \
        title sprintf("this machine's read bandwidth: %.1f GB/s", bandwidth_gbps), \
     data using ($0 - 1 / 6.0):5:(sprintf("%.0f%%", 100 * $5 / $8)) with labels boxed offset 0,0.8 font ",9" notitle, \
     data using ($0 + 1 / 6.0):7:(sprintf("%.0f%%", 100 * $7 / $8)) with labels boxed offset 0,0.8 font ",9" notitle
