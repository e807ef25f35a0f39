# projection.gp: figure 1 of `kvscope plot`: projection work vs tokens
# generated, with and without a KV cache, on log-log axes, with the slopes
# GSL fitted (kvscope writes them into projection.labels.gp).
#
# usage: gnuplot -c projection.gp projection.tsv OUT TERM
#   projection.tsv  kvscope's data (projection.labels.gp must sit beside it)
#   OUT             the image file, or - for the terminal
#   TERM            png (default), svg or dumb
#
# What it shows: a cached pass projects only its new token, so the rows
# projected add up to n after n tokens (slope 1); an uncached pass re-projects
# the whole sequence, 1 + 2 + ... + n = n(n+1)/2 rows (slope -> 2).

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
    exit error "projection.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
# the power laws GSL fitted (kvscope wrote their slopes and prefactors)
cached(x) = prefactor_cached * x ** slope_cached
uncached(x) = prefactor_uncached * x ** slope_uncached

set title title font ",14"
set label 101 caption at screen 0.01, screen 0.08 left font ",9"
set bmargin 10
set logscale xy
set xrange [1:fit_to]
set xtics (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
set grid xtics ytics mxtics mytics lc rgb "#dddddd"
set xlabel "tokens generated, n (from a 1-token prompt)"
set ylabel "token rows projected through W_Q, W_K, W_V (rows)"
set format y "1e%T"
set key top left box opaque samplen 3 spacing 1.2
set label 1 sprintf("slope %.3f", slope_uncached) at fit_to / 4, uncached(fit_to / 4) offset -3, 1.5 right font ",12" tc rgb "#D55E00"
set label 2 sprintf("slope %.3f", slope_cached) at fit_to / 4, cached(fit_to / 4) offset 3, -1.5 left font ",12" tc rgb "#0072B2"

set linetype 1 lc rgb "#0072B2" lw 2.5
set linetype 2 lc rgb "#D55E00" lw 2.5

plot data using 1:5 with lines lt 2 title "uncached: cumulative, after n tokens", \
     data using 1:4 with lines lt 1 title "cached (KV cache): cumulative, after n tokens", \
     [fit_from:fit_to] uncached(x) with lines lc rgb "black" dt 2 lw 1.5 \
        title sprintf("GSL fit, uncached: slope %.3f (n = %d..%d)", slope_uncached, fit_from, fit_to), \
     [fit_from:fit_to] cached(x) with lines lc rgb "black" dt 2 lw 1.5 \
        title sprintf("GSL fit, cached: slope %.3f (n = %d..%d)", slope_cached, fit_from, fit_to)
