# serve.gp: figure 17 of `kvscope plot`: many requests served by a real
# model over one page pool. Left: tokens generated per engine step against
# the arrival rate, for pages of 1, 16 and 128 rows and one page of the
# whole context per request (a contiguous max-length reservation), every
# pool the same number of rows. Middle: the share of the pool holding K/V.
# Right: rows mapped from the prefix cache against a shared prompt's length.
#
# usage: gnuplot -c serve.gp serve.tsv OUT TERM
#   serve.tsv  kvscope's data: one row per rate; serve.prefix.tsv and
#              serve.labels.gp beside it
#   OUT        the image file, or - for the terminal
#   TERM       png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
load base . ".labels.gp"
prefix = base . ".prefix.tsv"

if (term eq "png") {
    set terminal pngcairo size 1800,800 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1800,800 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,100 noenhanced
} else {
    exit error "serve.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set linetype 1 lc rgb "#0072B2" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#009E73" lw 2.5 pt 5 ps 1.3
set linetype 3 lc rgb "#D55E00" lw 2.5 pt 9 ps 1.4
set linetype 4 lc rgb "#000000" lw 2.5 pt 11 ps 1.4 dt 2

if (term eq "dumb") { set multiplot layout 3,1 title title } else { set multiplot layout 1,3 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.09 left font ",9"
set bmargin 11
set grid xtics ytics lc rgb "#dddddd"
set key top left box opaque samplen 3 spacing 1.2 font ",10"

set logscale x 2
set xlabel "arrival rate: requests per engine step"
set title "(a) throughput"
set ylabel "tokens generated per step"
set yrange [0:*]
set key bottom right
plot data using 1:(column("page1_tokens_per_step")) with linespoints lt 1 title "pages of 1 row", \
     data using 1:(column("page16_tokens_per_step")) with linespoints lt 2 title "pages of 16", \
     data using 1:(column("page128_tokens_per_step")) with linespoints lt 3 title "pages of 128", \
     data using 1:(column("whole_tokens_per_step")) with linespoints lt 4 title "one whole-context page each"

unset label 101
set title "(b) the pool's rows holding K/V (mean over the steps)"
set ylabel "share of the pool"
set yrange [0:1.05]
set key top left
plot data using 1:(column("page1_pool_share")) with linespoints lt 1 title "pages of 1 row", \
     data using 1:(column("page16_pool_share")) with linespoints lt 2 title "pages of 16", \
     data using 1:(column("page128_pool_share")) with linespoints lt 3 title "pages of 128", \
     data using 1:(column("whole_pool_share")) with linespoints lt 4 title "one whole-context page each"

unset logscale x
set autoscale y
set yrange [0:*]
set xlabel "shared prompt prefix: tokens every request starts with"
set title "(c) prefix caching (pages of 16, rate 1)"
set ylabel "rows mapped from the prefix cache / prompt tokens"
plot prefix using 1:(column("hit_share")) with linespoints lt 2 title "rows not written again"
unset multiplot
