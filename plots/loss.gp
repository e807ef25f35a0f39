# loss.gp: figure 11 of `kvscope plot`: the shipped models learning. Bits per
# byte of text (the loss in nats per token over ln 2 and over the bytes each
# token covers) against the tokens trained on: each training step's batch
# (faint), its running mean, and the held-out text's (points).
#
# usage: gnuplot -c loss.gp loss.tsv OUT TERM
#   loss.tsv  kvscope's data for the first model, one row per step; the
#             second and third models' rows are in the tables loss.labels.gp names
#   OUT       the image file, or - for the terminal
#   TERM      png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
load base . ".labels.gp"
dir = strstrt(data, "/") ? data[1:strlen(data) - strlen("loss.tsv")] : ""

if (term eq "png") {
    set terminal pngcairo size 1400,850 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1400,850 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 120,40 noenhanced
} else {
    exit error "loss.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set datafile missing "-"
set linetype 1 lc rgb "#0072B2" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#D55E00" lw 2.5 pt 5 ps 1.3
set linetype 3 lc rgb "#9ecae1" lw 1
set linetype 4 lc rgb "#fdae6b" lw 1
set linetype 5 lc rgb "#009E73" lw 2.5 pt 9 ps 1.3
set linetype 6 lc rgb "#a1d99b" lw 1

set title title font ",14"
set label 101 caption at screen 0.01, screen 0.09 left font ",9"
set bmargin 11
set xlabel "tokens trained on (millions)"
set ylabel "bits per byte (lower is better)"
set logscale x
set yrange [1.0:4.5]
set grid xtics ytics mxtics lc rgb "#dddddd"
set key top right box opaque samplen 3 spacing 1.2 font ",10"

M = 1e6
plot data using ($1 / M):3 with lines lt 3 title first_name . ": training, each step's batch", \
     dir . second using ($1 / M):3 with lines lt 4 title second_name . ": training, each step's batch", \
     dir . third using ($1 / M):3 with lines lt 6 title third_name . ": training, each step's batch", \
     data using ($1 / M):4 with lines lt 1 title sprintf("%s: training, mean of %d steps", first_name, mean_steps), \
     dir . second using ($1 / M):4 with lines lt 2 title sprintf("%s: training, mean of %d steps", second_name, mean_steps), \
     dir . third using ($1 / M):4 with lines lt 5 title sprintf("%s: training, mean of %d steps", third_name, mean_steps), \
     data using ($1 / M):5 with points lt 1 title first_name . ": held-out text", \
     dir . second using ($1 / M):5 with points lt 2 title second_name . ": held-out text", \
     dir . third using ($1 / M):5 with points lt 5 title third_name . ": held-out text"
