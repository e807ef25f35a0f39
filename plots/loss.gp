# loss.gp: figure 11 of `kvscope plot`: the shipped models learning. Bits per
# byte of text (the loss in nats per token over ln 2 and over the bytes each
# token covers) against the tokens trained on: each training step's batch
# (faint), its running mean, and the held-out text's (points).
#
# usage: gnuplot -c loss.gp loss.tsv OUT TERM
#   loss.tsv  kvscope's data for the first model, one row per step; every
#             model's table (this one first) is a word of loss.labels.gp's
#             `tables`, its name the same word of `names`, its dash type
#             the same word of `dashes` (2: a variant of the model before it)
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
# model i: its mean and held-out points in word i of dark, its batches in
# the same word of light (Okabe-Ito hues and their pale twins)
dark = "#0072B2 #D55E00 #009E73 #CC79A7"
light = "#9ecae1 #fdae6b #a1d99b #e7b9d4"
n = words(tables)
if (n > words(dark)) { exit error "loss.gp: more models than colours" }
table(i) = dir . word(tables, i)

set title title font ",14"
set label 101 caption at screen 0.01, screen 0.12 left font ",9"
set bmargin 13
set xlabel "tokens trained on (millions)"
set ylabel "bits per byte (lower is better)"
set logscale x
set yrange [1.0:4.5]
set grid xtics ytics mxtics lc rgb "#dddddd"
set key top right box opaque samplen 3 spacing 1.2 font ",10"

M = 1e6
plot for [i=1:n] table(i) using ($1 / M):3 with lines lw 1 lc rgb word(light, i) \
         title word(names, i) . ": training, each step's batch", \
     for [i=1:n] table(i) using ($1 / M):4 with lines lw 2.5 lc rgb word(dark, i) dt int(word(dashes, i)) \
         title sprintf("%s: training, mean of %d steps", word(names, i), mean_steps), \
     for [i=1:n] table(i) using ($1 / M):5 with points pt 5 + 2 * (i - 1) ps 1.3 lc rgb word(dark, i) \
         title word(names, i) . ": held-out text"
