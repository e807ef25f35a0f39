# mla.gp: figure 10 of `kvscope plot`: multi-head latent attention (MLA).
# Left: what one token costs in the cache of MHA, GQA, MQA and MLA configs,
# each MLA latent beside the per-head K,V it stands for. Right: the work of
# the attention sublayer per generated token on MLA's two read paths:
# absorbed, and decompress with and without the LRU of decompressed tiles.
#
# usage: gnuplot -c mla.gp mla.tsv OUT TERM
#   mla.tsv  kvscope's data: one row per generated token (context, FLOPs per
#            path, closed forms); mla.bytes.tsv (one row per config) and
#            mla.labels.gp sit beside it
#   OUT      the image file, or - for the terminal
#   TERM     png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
bytes = base . ".bytes.tsv"
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1600,850 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1600,850 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,90 noenhanced
} else {
    exit error "mla.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
KiB = 2.0 ** 10
stats bytes using 5 nooutput
n_bars = STATS_records

# side by side in an image; one above the other in a terminal, where width is short
if (term eq "dumb") { set multiplot layout 2,1 title title } else { set multiplot layout 1,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.075 left font ",9"
set bmargin 10

# left: bytes per token, one horizontal bar per config, coloured by kind, its
# name and size written above it; an empty row at the bottom holds the key
kind(k) = k eq "MHA" ? 1 : k eq "GQA" ? 2 : k eq "MQA" ? 3 : k eq "MLA-decompressed" ? 4 : 5
ratio(b, m) = b == m ? "" : sprintf(", 1/%.1f of its MHA", m / b)
set linetype 1 lc rgb "#D55E00"
set linetype 2 lc rgb "#0072B2"
set linetype 3 lc rgb "#56B4E9"
set linetype 4 lc rgb "#999999"
set linetype 5 lc rgb "#009E73"
set style fill solid 0.85 border -1
if (term eq "dumb") { set style fill empty border }   # a terminal draws outlines only
set yrange [n_bars + 0.6:-0.75]   # top to bottom, in the order of the rows
unset ytics
set xrange [0:1050]
set xlabel "KV cache bytes per token, all layers, " . bar_format . " (KiB)"
set grid xtics lc rgb "#dddddd"
set title "(a) one token in the cache: MHA, GQA, MQA, and MLA's latent beside the K,V it stands for"
set key bottom right box opaque samplen 2 spacing 1.1 font ",9" maxrows 3 width -2
# a bar from 0 to the bytes; coloured by kind, except in a terminal (dumb
# leaves out boxes whose colour is variable)
bar = '(column(5) / KiB / 2):0:(0):(column(5) / KiB):($0 - 0.05):($0 + 0.35)'
if (term eq "dumb") { bar_colour = 'lc 4' } else { bar = bar . ':(kind(strcol(2)))'; bar_colour = 'lc variable' }
plot bytes using @bar with boxxyerror @bar_colour notitle, \
     bytes using (0):($0 - 0.27):(sprintf("%s: %.1f KiB, %d layers%s", strcol(1), column(5) / KiB, column(3), \
                                          ratio(column(5), column(7)))) \
         with labels left offset 1, 0 font ",10" notitle, \
     NaN with boxes lt 1 title "MHA: K,V heads = query heads", \
     NaN with boxes lt 2 title "GQA: query heads share K,V heads", \
     NaN with boxes lt 3 title "MQA: one K,V head (a what-if)", \
     NaN with boxes lt 4 title "MLA config as MHA: per-head K, V", \
     NaN with boxes lt 5 title "MLA: the latent row it stores"

# right: FLOPs per generated token
unset label 101
set ytics
set grid xtics ytics mytics lc rgb "#dddddd"
set yrange [1e4:1e8]   # two decades of room at the top for the key
set xrange [0:260]
set logscale y 10
set format y "%g"
set xlabel "context: positions the token attends to (tokens)"
set ylabel "attention sublayer FLOPs for one generated token, " . layers . " layers (FLOPs)"
lru = tiles * tile_rows / layers   # positions the LRU holds for every layer
set arrow 1 from lru, graph 0 to lru, graph 1 nohead lc rgb "#777777" dt 3
set label 2 sprintf("the LRU's %d tiles of %d positions\nhold %d positions of %d layers", tiles, tile_rows, lru, \
                    layers) at lru, graph 0.72 right offset -1.5, 0 font ",9"
set title sprintf("(b) decompress vs absorbed, measured on %s", run_model)
set key top left box opaque samplen 3 spacing 1.2 font ",10" maxrows auto width 0
set linetype 1 lc rgb "#009E73" lw 2.5
set linetype 2 lc rgb "#0072B2" lw 2.5
set linetype 3 lc rgb "#D55E00" lw 2.5
set linetype 4 lc rgb "#000000" lw 1.2 dt 2
plot data using 1:"absorbed_flops" with lines lt 1 title "absorbed: W_uk in the query, W_uv after, attention on the latent", \
     data using 1:"decompress_flops" with lines lt 3 title "decompress, no tile cache: every row up-projected every step", \
     data using 1:"decompress_lru_flops" with lines lt 2 \
         title sprintf("decompress through an LRU of %d tiles (the MLA notes): only new rows, while they fit", tiles), \
     data using 1:"absorbed_closed_form" with lines lt 4 title "mla_flops() closed forms (absorbed; decompress, no reuse)", \
     data using 1:"decompress_closed_form" with lines lt 4 notitle
unset multiplot
