# retrieval.gp: figure 16 of `kvscope plot`: a fact stated early in a text
# and asked for again D tokens later, through a trained model and each cache.
# Left: the share of the fact's rows the cache still holds when the question
# comes. Right: how many bits the fact saves on the answer (bits to predict
# the name without the fact minus with it); 0 means the fact was of no use.
# The bars are 95% intervals of the mean over the facts (a bootstrap).
#
# usage: gnuplot -c retrieval.gp retrieval.tsv OUT TERM
#   retrieval.tsv  kvscope's data: one row per distance; retrieval.labels.gp beside it
#   OUT            the image file, or - for the terminal
#   TERM           png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1600,850 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1600,850 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,80 noenhanced
} else {
    exit error "retrieval.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set linetype 1 lc rgb "#000000" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#0072B2" lw 2.5 pt 5 ps 1.3
set linetype 3 lc rgb "#D55E00" lw 2.5 pt 9 ps 1.4
set linetype 4 lc rgb "#009E73" lw 2.5 pt 11 ps 1.4
set linetype 5 lc rgb "#CC79A7" lw 2.5 pt 13 ps 1.4
set linetype 6 lc rgb "#E69F00" lw 2.0 pt 6 ps 1.2 dt 2
set linetype 7 lc rgb "#56B4E9" lw 2.0 pt 4 ps 1.2 dt 2

if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.085 left font ",9"
set bmargin 11
set logscale x 2
set xrange [12:1200]
set xtics (16, 32, 64, 128, 256, 512, 896)
set xlabel "D: tokens between the fact and the question"
set grid xtics ytics lc rgb "#dddddd"
set key top right box opaque samplen 3 spacing 1.2 font ",10"

set title sprintf("(a) share of the fact's rows held at the question (budget %d rows)", budget)
set ylabel "share of the name's rows in the cache"
set yrange [-0.05:1.6]
plot data using 1:(column("exact_held")) with linespoints lt 1 title "exact (q4_0 and KIVI-2 hold all rows too)", \
     data using 1:(column("window_held")) with linespoints lt 2 title "window (ring)", \
     data using 1:(column("sinks4_held")) with linespoints lt 3 title "4 sinks + window", \
     data using 1:(column("h2o_held")) with linespoints lt 4 title "heavy hitters (H2O), half recent", \
     data using 1:(column("sparse_held")) with linespoints lt 5 title "block-sparse pages (the MLA notes)"

unset label 101
# each cache a little to the side of its distance, so the bars do not cover
# each other
dx(i) = column(1) * 1.04 ** (i - 3)
set bars 0.5
set title "(b) what the fact is worth: bits it saves on the answer (bars: 95% over the facts)"
set ylabel "bits saved (without the fact - with it)"
set autoscale y
set key top right
plot data using (dx(0)):(column("exact_gain_bits")):(column("exact_gain_lo")):(column("exact_gain_hi")) \
         with yerrorlines lt 1 title "exact", \
     data using (dx(1)):(column("window_gain_bits")):(column("window_gain_lo")):(column("window_gain_hi")) \
         with yerrorlines lt 2 title "window (ring)", \
     data using (dx(2)):(column("sinks4_gain_bits")):(column("sinks4_gain_lo")):(column("sinks4_gain_hi")) \
         with yerrorlines lt 3 title "4 sinks + window", \
     data using (dx(3)):(column("h2o_gain_bits")):(column("h2o_gain_lo")):(column("h2o_gain_hi")) \
         with yerrorlines lt 4 title "heavy hitters (H2O)", \
     data using (dx(4)):(column("sparse_gain_bits")):(column("sparse_gain_lo")):(column("sparse_gain_hi")) \
         with yerrorlines lt 5 title "block-sparse pages", \
     data using (dx(5)):(column("q4_0_gain_bits")):(column("q4_0_gain_lo")):(column("q4_0_gain_hi")) \
         with yerrorlines lt 6 title "q4_0 K and V, every row", \
     data using (dx(6)):(column("kivi2_gain_bits")):(column("kivi2_gain_lo")):(column("kivi2_gain_hi")) \
         with yerrorlines lt 7 title "KIVI 2-bit, every row", \
     0 with lines lc rgb "#888888" dt 3 notitle
unset multiplot
