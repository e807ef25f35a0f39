# paged.gp: figure 7 of `kvscope plot`: the paged cache against its page
# size. Left: the rows a request reserves but leaves empty at the end of its
# last page (internal waste), and the pages its block table maps. Right: what
# requests with a common prompt prefix hold, with the full pages of the
# prefix shared and as if each held its own; the pages saved are printed.
#
# usage: gnuplot -c paged.gp paged.tsv OUT TERM
#   paged.tsv  kvscope's data: one row per page size (waste, requests of many
#              lengths); paged.prefix.tsv (one row per page size, prefix
#              sharing) and paged.labels.gp sit beside it
#   OUT        the image file, or - for the terminal
#   TERM       png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
prefix = base . ".prefix.tsv"
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1800,850 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1800,850 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,130 noenhanced
} else {
    exit error "paged.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
KiB = 2.0 ** 10

# side by side in an image; one above the other in a terminal, where width is short
if (term eq "dumb") { set multiplot layout 3,1 title title } else { set multiplot layout 1,3 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.075 left font ",9"
set bmargin 10

# left: empty rows per request
set logscale x 2
set format x "%.0f"
set xrange [0.7:370]
set xtics rotate by -30 (1, 2, 4, 8, 16, 32, 64, 128, 256)
set xlabel "page size (rows, i.e. token positions, per page)"
set ylabel "empty rows per request, at the end of its last page (rows)"
set yrange [0:240]   # headroom: the key sits above the curves
set grid xtics ytics lc rgb "#dddddd"
set title sprintf("(a) internal waste: %d requests of lengths 1 .. %d", waste_requests, max_len)
set key top left box opaque samplen 3 spacing 1.2 font ",9"
set linetype 1 lc rgb "#D55E00" lw 2.5 pt 7 ps 1.2
set linetype 2 lc rgb "#000000" lw 1.5 dt 2
set linetype 3 lc rgb "#E69F00" lw 2 pt 5
set linetype 4 lc rgb "#0072B2" lw 2 pt 9
plot data using 1:"waste_rows_per_request" with linespoints lt 1 \
         title sprintf("measured, mean of %d requests", waste_requests), \
     data using 1:"expected_waste_per_request" with lines lt 2 \
         title sprintf("(P - 1) / 2: the mean over lengths 1 .. %d", max_len), \
     data using 1:(column(sprintf("waste_rows_len_%d", fixed_len))) with linespoints lt 3 \
         title sprintf("one request of %d tokens", fixed_len)

# middle: the other side of the trade, the block table's length
unset label 101
set title "(b) the block table: pages each request maps"
set ylabel "pages per request, mean (log scale)"
set logscale y 2
set format y "%.0f"
set yrange [0.5:2048]
set key top right
plot data using 1:"pages_per_request" with linespoints lt 4 title "pages per request, mean"
unset logscale y
set format y "% h"

# right: prefix sharing
set ylabel "KV cache pages reserved, all requests (KiB)"
set yrange [0:1400]   # headroom for the key
set xrange [0.45:400] # room for the first label, left of its point
set title sprintf("(c) %d prompts with a %d-token common prefix (%d positions each)", share_requests, share_prefix, \
                  share_rows)
set key top left box opaque samplen 3 spacing 1.2 font ",9"
set linetype 1 lc rgb "#999999" lw 2 pt 5 dt solid
set linetype 2 lc rgb "#009E73" lw 2.5 pt 7 ps 1.2 dt solid
set linetype 3 lc rgb "#000000" lw 1.5 dt 2
plot prefix using 1:(column("bytes_unshared") / KiB) with linespoints lt 1 \
         title "every request in pages of its own", \
     prefix using 1:(column("bytes_reserved") / KiB) with linespoints lt 2 \
         title "the full pages of the prefix shared (measured)", \
     prefix using 1:(column("bytes_exact") / KiB) with lines lt 3 \
         title "no rounding: the prefix once, each one's own rows", \
     prefix using 1:(column("bytes_reserved") / KiB):(sprintf("%d saved", column("pages_saved"))) \
         with labels left rotate by -40 offset 0.4, -0.9 font ",9" textcolor rgb "#009E73" notitle
unset multiplot
