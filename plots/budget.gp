# budget.gp: figure 14 of `kvscope plot`: eviction policies at an equal
# budget of rows per layer, on held-out text through a trained model inside
# its context. Left: how far each moves the next-token distributions from
# the exact cache's (KL, log scale) against the budget. Right: the bits per
# byte each scores minus the exact cache's. The bars are 95% intervals (a
# bootstrap over segments of the text; on the right, of the paired
# difference).
#
# usage: gnuplot -c budget.gp budget.tsv OUT TERM
#   budget.tsv  kvscope's data: one row per budget; budget.labels.gp beside it
#   OUT         the image file, or - for the terminal
#   TERM        png (default), svg or dumb

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
    exit error "budget.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set linetype 1 lc rgb "#0072B2" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#D55E00" lw 2.5 pt 5 ps 1.3
set linetype 3 lc rgb "#009E73" lw 2.5 pt 9 ps 1.4
set linetype 4 lc rgb "#CC79A7" lw 2.5 pt 11 ps 1.4
set linetype 5 lc rgb "#000000" lw 1.5 dt 2

if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.085 left font ",9"
set bmargin 11
set logscale x 2
set xrange [12:680]
set xtics (16, 32, 64, 128, 256, 512)
set xlabel "budget: rows per layer the cache holds"
set grid xtics ytics lc rgb "#dddddd"
set key top right box opaque samplen 3 spacing 1.2 font ",10"

# each policy a little to the side of the budget it holds, so the bars of
# the four do not cover each other
dx(p) = column(1) * 1.035 ** (p - 1.5)

set title "(a) distance from the exact cache"
set ylabel "KL(exact || cache), nats a token (log scale)"
set logscale y
set bars 0.6
plot data using (dx(0)):(column("window_kl")):(column("window_kl_lo")):(column("window_kl_hi")) \
         with yerrorlines lt 1 title "window (ring)", \
     data using (dx(1)):(column("sinks4_kl")):(column("sinks4_kl_lo")):(column("sinks4_kl_hi")) \
         with yerrorlines lt 2 title "4 sinks + window", \
     data using (dx(2)):(column("h2o_kl")):(column("h2o_kl_lo")):(column("h2o_kl_hi")) \
         with yerrorlines lt 3 title "heavy hitters (H2O), half recent", \
     data using (dx(3)):(column("sparse_kl")):(column("sparse_kl_lo")):(column("sparse_kl_hi")) \
         with yerrorlines lt 4 title "block-sparse pages (the MLA notes)"

unset label 101
unset logscale y
set title sprintf("(b) bits per byte against the exact cache's %.4f, %d held-out tokens", full_bpb, tokens)
set ylabel "bits per byte minus the exact cache's (below 0: better)"
set key top right
plot data using (dx(0)):(column("window_vs_exact")):(column("window_vs_exact_lo")):(column("window_vs_exact_hi")) \
         with yerrorlines lt 1 title "window (ring)", \
     data using (dx(1)):(column("sinks4_vs_exact")):(column("sinks4_vs_exact_lo")):(column("sinks4_vs_exact_hi")) \
         with yerrorlines lt 2 title "4 sinks + window", \
     data using (dx(2)):(column("h2o_vs_exact")):(column("h2o_vs_exact_lo")):(column("h2o_vs_exact_hi")) \
         with yerrorlines lt 3 title "heavy hitters (H2O)", \
     data using (dx(3)):(column("sparse_vs_exact")):(column("sparse_vs_exact_lo")):(column("sparse_vs_exact_hi")) \
         with yerrorlines lt 4 title "block-sparse pages", \
     0 with lines lt 5 title "exact cache, every row"
unset multiplot
