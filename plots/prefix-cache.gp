# prefix-cache.gp: figure 19 of `kvscope plot`: the two prefix caches of
# `kvscope serve` (block: vLLM's hash of full pages; radix: SGLang's radix
# tree over token ids) on a chat and a few-shot workload, against the
# pool's size in pages. (a) hit rate, (b) engine steps for the whole
# workload, (c) pages the cache gave up for room, (d) pages it held at the
# end. Colour: the cache; line style: the workload.
#
# usage: gnuplot -c prefix-cache.gp prefix-cache.tsv OUT TERM
#   prefix-cache.tsv  kvscope's data: one row per pool size;
#                     prefix-cache.labels.gp beside it
#   OUT               the image file, or - for the terminal
#   TERM              png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1800,1200 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1800,1200 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,120 noenhanced
} else {
    exit error "prefix-cache.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
# block blue, radix orange; chat solid, fewshot dashed
set linetype 1 lc rgb "#0072B2" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#D55E00" lw 2.5 pt 9 ps 1.4
set linetype 3 lc rgb "#0072B2" lw 2.5 pt 6 ps 1.3 dt 2
set linetype 4 lc rgb "#D55E00" lw 2.5 pt 8 ps 1.4 dt 2

if (term eq "dumb") { set multiplot layout 4,1 title title } else { set multiplot layout 2,2 title title font ",14" }
set label 101 caption at screen 0.01, screen 0.05 left font ",9"
set grid xtics ytics lc rgb "#dddddd"
set key box opaque samplen 3 spacing 1.2 font ",10"
set logscale x 2
set xlabel "the pool: pages of 16 rows"

set title "(a) hit rate: prompt tokens found cached, not run"
set ylabel "share of the prompt tokens"
set yrange [0:1]
set key top left
plot data using 1:(column("chat_block_hit_rate")) with linespoints lt 1 title "chat, block", \
     data using 1:(column("chat_radix_hit_rate")) with linespoints lt 2 title "chat, radix", \
     data using 1:(column("fewshot_block_hit_rate")) with linespoints lt 3 title "fewshot, block", \
     data using 1:(column("fewshot_radix_hit_rate")) with linespoints lt 4 title "fewshot, radix"
unset label 101

set title "(b) end to end: engine steps for every request"
set ylabel "steps"
set yrange [0:*]
set key top right
plot data using 1:(column("chat_block_steps")) with linespoints lt 1 title "chat, block", \
     data using 1:(column("chat_radix_steps")) with linespoints lt 2 title "chat, radix", \
     data using 1:(column("fewshot_block_steps")) with linespoints lt 3 title "fewshot, block", \
     data using 1:(column("fewshot_radix_steps")) with linespoints lt 4 title "fewshot, radix"

set bmargin 9
set title "(c) pages evicted for room"
set ylabel "pages"
plot data using 1:(column("chat_block_evicted")) with linespoints lt 1 title "chat, block", \
     data using 1:(column("chat_radix_evicted")) with linespoints lt 2 title "chat, radix", \
     data using 1:(column("fewshot_block_evicted")) with linespoints lt 3 title "fewshot, block", \
     data using 1:(column("fewshot_radix_evicted")) with linespoints lt 4 title "fewshot, radix"

set title "(d) pages the cache holds at the end"
set ylabel "pages"
set key top left
plot data using 1:(column("chat_block_held")) with linespoints lt 1 title "chat, block", \
     data using 1:(column("chat_radix_held")) with linespoints lt 2 title "chat, radix", \
     data using 1:(column("fewshot_block_held")) with linespoints lt 3 title "fewshot, block", \
     data using 1:(column("fewshot_radix_held")) with linespoints lt 4 title "fewshot, radix"
unset multiplot
