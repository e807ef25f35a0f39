# step-time.gp: figure 3 of `kvscope plot`: the measured wall time of every
# generation step, with and without a KV cache, against the position of the
# step's last token. Linear axes: the uncached step grows in proportion to
# the sequence it re-runs, the cached one stays flat (its attention grows too,
# but one row per step is little beside the weights it reads).
#
# usage: gnuplot -c step-time.gp step-time.tsv OUT TERM
#   step-time.tsv  kvscope's data (step-time.labels.gp beside it); its
#                  seconds columns are measurements, different every run
#   OUT            the image file, or - for the terminal
#   TERM           png (default), svg or dumb

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
    exit error "step-time.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
set title title font ",14"
set label 101 caption . " (kernels " . kernels . ")" at screen 0.01, screen 0.08 left font ",9"
set bmargin 10
set grid xtics ytics lc rgb "#dddddd"
set xlabel "position of the step's last token (tokens)"
set ylabel "measured time of the step (ms)"
set yrange [0:*]
set key top left box opaque samplen 3 spacing 1.2

set linetype 1 lc rgb "#0072B2" lw 2 pt 7 ps 0.6
set linetype 2 lc rgb "#D55E00" lw 2 pt 7 ps 0.6

# columns 4 and 5 hold the FLOPs the engine counted for each step, to compare by hand
plot data using 1:($3 * 1e3) with linespoints lt 2 title "uncached: re-runs every position up to this one", \
     data using 1:($2 * 1e3) with linespoints lt 1 title "cached (KV cache): runs the new token only"
