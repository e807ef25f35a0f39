# speculative.gp: figure 20 of `kvscope plot`: speculative decoding (a
# draft model proposes K tokens, the target checks them in one pass) on
# held-out text, against K. (a) the share of proposals kept; (b) the share
# kept at each place in the draft, at the largest K; (c) tokens a
# verification pass yields, measured and as independent acceptance would
# give; (d) the speed-up over the target alone: measured time, FLOPs and
# weight bytes read.
#
# usage: gnuplot -c speculative.gp speculative.tsv OUT TERM
#   speculative.tsv  kvscope's data: one row per K; speculative.position.tsv
#                    and speculative.labels.gp beside it
#   OUT              the image file, or - for the terminal
#   TERM             png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
position = base . ".position.tsv"
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1800,1200 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1800,1200 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,120 noenhanced
} else {
    exit error "speculative.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set linetype 1 lc rgb "#0072B2" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#D55E00" lw 2.5 pt 9 ps 1.4
set linetype 3 lc rgb "#009E73" lw 2.5 pt 5 ps 1.3
set linetype 4 lc rgb "#0072B2" lw 2 pt 6 ps 1.2 dt 2

if (term eq "dumb") { set multiplot layout 4,1 title title } else { set multiplot layout 2,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.05 left font ",9"
set grid xtics ytics lc rgb "#dddddd"
set key box opaque samplen 3 spacing 1.2 font ",10"
set xtics 1
set offsets 0.3, 0.3, 0, 0

set title "(a) proposals the target keeps"
set xlabel "K: draft tokens a round"
set ylabel "share of the proposals"
set yrange [0:1]
set key top right
plot data using 1:(column("accept_rate")) with linespoints lt 1 title "kept / drafted", \
     data using 1:(column("agree_rate")) with linespoints lt 2 title "a = kept / judged (those after a refusal go unjudged)"
unset label 101

set title "(b) kept by place in the draft, at the largest K"
set xlabel "place of the proposal in its round's draft"
set ylabel "share kept, of the rounds that drafted that far"
set style fill solid 0.6 border -1
set boxwidth 0.6
plot position using 1:(column("accept_rate")) with boxes lt 1 title "kept / proposed there"

set bmargin 9
set title "(c) tokens a verification pass yields"
set xlabel "K: draft tokens a round"
set ylabel "tokens"
set yrange [0:*]
set key top left
plot data using 1:(column("tokens_per_pass")) with linespoints lt 1 title "measured", \
     data using 1:(column("tokens_per_pass_iid")) with linespoints lt 4 title "(1 - a^(K+1)) / (1 - a): independent agreements, a from (a)", \
     data using 1:($1 + 1) with lines lt 3 dt 3 title "K + 1: every proposal kept"

set title "(d) against the target alone (above 1: speculation wins)"
set ylabel "target alone / speculative"
set key bottom left
plot data using 1:(column("speedup")) with linespoints lt 2 title "time (measured)", \
     data using 1:(column("weight_byte_ratio")) with linespoints lt 1 title "weight bytes read", \
     data using 1:(column("flop_ratio")) with linespoints lt 3 title "FLOPs", \
     1 with lines lc rgb "#888888" dt 2 notitle
unset multiplot
