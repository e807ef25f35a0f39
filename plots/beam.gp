# beam.gp: figure 9 of `kvscope plot`: beam search memory against the beam
# width, with a self-attention cache that copies a beam's rows when it forks
# (contiguous: no copy-on-write) and with paged caches whose forks share
# pages (copy-on-write). Left: the most the self cache held. Right: the bytes
# the forks and the copies on write moved over the whole search.
#
# usage: gnuplot -c beam.gp beam.tsv OUT TERM
#   beam.tsv  kvscope's data: one row per width, columns per cache
#             (contiguous_*, paged16_*, paged4_*); beam.labels.gp sits beside it
#   OUT       the image file, or - for the terminal
#   TERM      png (default), svg or dumb

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
    set terminal dumb size 130,90 noenhanced
} else {
    exit error "beam.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
MiB = 2.0 ** 20
# one colour per cache, the same in both panels
set linetype 1 lc rgb "#D55E00" lw 2.5 pt 7 ps 1.2
set linetype 2 lc rgb "#0072B2" lw 2.5 pt 5 ps 1.2
set linetype 3 lc rgb "#009E73" lw 2.5 pt 9 ps 1.3
set linetype 4 lc rgb "#000000" lw 1.5 dt 2

# side by side in an image; one above the other in a terminal, where width is short
if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.075 left font ",9"
set bmargin 10

set xrange [0:33]
set xtics (1, 2, 4, 8, 16, 32)
set xlabel "beam width W (beams searched together)"
set grid xtics ytics lc rgb "#dddddd"
set key top left box opaque samplen 3 spacing 1.2 font ",10"

# left: the self cache's peak
set ylabel "self-attention cache, most bytes held after a step (MiB)"
set yrange [0:*]
set offsets 0, 0, graph 0.25, 0   # headroom for the key
set title sprintf("(a) memory: the self cache at its fullest (beams of up to %d tokens)", max_len)
plot data using 1:(column("contiguous_peak_bytes") / MiB) with linespoints lt 1 \
         title "contiguous: a fork copies the parent's rows (no copy-on-write)", \
     data using 1:(column("paged16_peak_bytes") / MiB) with linespoints lt 2 \
         title "paged, 16-row pages: a fork shares pages (copy-on-write)", \
     data using 1:(column("paged4_peak_bytes") / MiB) with linespoints lt 3 \
         title "paged, 4-row pages: a fork shares pages (copy-on-write)", \
     data using 1:(column("self_closed_form_bytes") / MiB) with lines lt 4 \
         title sprintf("W x %d tokens of K and V, nothing shared (the closed form)", max_len)

# right: bytes copied
unset label 101
set ylabel "bytes copied by forks and copies on write, whole search (MiB)"
set title "(b) copying: what the forks cost"
plot data using 1:(column("contiguous_copied_bytes") / MiB) with linespoints lt 1 \
         title "contiguous: every fork copies all of the parent's rows", \
     data using 1:(column("paged16_copied_bytes") / MiB) with linespoints lt 2 \
         title "paged 16: a shared page copied on its first write (its rows so far)", \
     data using 1:(column("paged4_copied_bytes") / MiB) with linespoints lt 3 \
         title "paged 4: the same, with smaller pages to copy"
unset multiplot
