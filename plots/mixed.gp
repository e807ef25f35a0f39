# mixed.gp: figure 15 of `kvscope plot`: the mixed-precision proposal's mixed-precision cache on
# a trained model and held-out text: the newest H rows in f16, the older ones
# quantized to a cold format. Left: how far the next-token distributions move
# from the exact cache's (KL, log scale) against H. Right: the same KL
# against the bytes the cache holds: the trade the hot window buys. The bars
# are 95% intervals (a bootstrap over segments of the text).
#
# usage: gnuplot -c mixed.gp mixed.tsv OUT TERM
#   mixed.tsv  kvscope's data: one row per hot window size H (0: all cold);
#              mixed.labels.gp sits beside it
#   OUT        the image file, or - for the terminal
#   TERM       png (default), svg or dumb

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
    exit error "mixed.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set linetype 1 lc rgb "#0072B2" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#D55E00" lw 2.5 pt 5 ps 1.3
set linetype 3 lc rgb "#000000" lw 1.5 dt 2

if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.085 left font ",9"
set bmargin 11
set grid xtics ytics lc rgb "#dddddd"
set key top right box opaque samplen 3 spacing 1.2 font ",10"
set logscale y
set format y "%.0e"
KiB = 1024.0

# left: KL against the hot window; H = 0 drawn at the left edge, by its index
set title "(a) the hot window's size"
set xlabel "hot rows kept in f16 (0: the whole cache in the cold format)"
set ylabel "KL(exact || cache), nats a token (log scale)"
set xrange [-0.3:*]
set offsets 0, 0.3, 0, 0
set bars 0.6
plot data using 0:(column("q8_0_kl")):(column("q8_0_kl_lo")):(column("q8_0_kl_hi")):xtic(1) \
         with yerrorlines lt 1 title "older rows in q8_0", \
     data using 0:(column("q4_0_kl")):(column("q4_0_kl_lo")):(column("q4_0_kl_hi")) \
         with yerrorlines lt 2 title "older rows in q4_0", \
     f16_kl with lines lt 3 title "every row in f16"

# right: KL against bytes
unset label 101
set title "(b) what the quality costs in memory"
set xlabel "bytes the cache holds after the last token (KiB)"
set xrange [*:*]
set offsets 0, 0, 0, 0
set xtics autofreq
plot data using (column("q8_0_cache_bytes") / KiB):(column("q8_0_kl")):(column("q8_0_kl_lo")):(column("q8_0_kl_hi")) \
         with yerrorlines lt 1 title "q8_0 past, H = 0 .. 512", \
     data using (column("q4_0_cache_bytes") / KiB):(column("q4_0_kl")):(column("q4_0_kl_lo")):(column("q4_0_kl_hi")) \
         with yerrorlines lt 2 title "q4_0 past, H = 0 .. 512", \
     data using (column("q4_0_cache_bytes") / KiB):(column("q4_0_kl")):(sprintf("H=%d", column("hot_rows"))) \
         with labels offset 0,1 font ",9" notitle
unset multiplot
