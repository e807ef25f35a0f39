# streaming.gp: figure 12 of `kvscope plot`: StreamingLLM's comparison on
# kvscope's trained model. The held-out text streams to four times the
# context the model trained on; each line is the mean negative
# log-likelihood (log-perplexity, nats a token) of a bin of positions, for
# the full cache, a window, 4 attention sinks beside a window at the same
# budget, llama.cpp's context shift keeping 0 and 4 first tokens, and the
# window recomputed from scratch (sampled steps).
#
# usage: gnuplot -c streaming.gp streaming.tsv OUT TERM
#   streaming.tsv  kvscope's data: one row per bin of positions;
#                  streaming.labels.gp sits beside it
#   OUT            the image file, or - for the terminal
#   TERM           png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1400,850 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1400,850 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 120,40 noenhanced
} else {
    exit error "streaming.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders
set linetype 1 lc rgb "#000000" lw 2.5
set linetype 2 lc rgb "#0072B2" lw 2.5
set linetype 3 lc rgb "#009E73" lw 2 dt 2
set linetype 4 lc rgb "#D55E00" lw 2.5
set linetype 5 lc rgb "#CC79A7" lw 1.5 pt 6 ps 1.6
set linetype 6 lc rgb "#999999" lw 1.5 dt 4
set linetype 7 lc rgb "#E69F00" lw 2 dt 3
set linetype 8 lc rgb "#56B4E9" lw 2 dt 2

set title title font ",14"
set label 101 caption at screen 0.01, screen 0.135 left font ",9"
set bmargin 14
set xlabel "position in the stream (tokens)"
set ylabel "log-perplexity: mean -ln p of the next token (nats)"
set grid xtics ytics lc rgb "#dddddd"
set key top left box opaque samplen 3 spacing 1.2 font ",10"
set yrange [0:*]
set offsets 0, 0, graph 0.2, 0
set arrow 1 from trained, graph 0 to trained, graph 1 nohead lt 6
set label 102 sprintf(" the %d positions it trained on", trained) at trained, graph 0.04 left font ",9" tc rgb "#666666"

plot data using 1:(column("full_log_ppl")) with lines lt 1 title "full cache (every position kept)", \
     data using 1:(column("window_log_ppl")) with lines lt 2 title sprintf("window of %d (ring)", window), \
     data using 1:(column("sinks4_log_ppl")) with lines lt 4 \
         title sprintf("%d sinks + window of %d (ring: sinks at their positions)", sinks, window - sinks), \
     data using 1:(column("shift0_log_ppl")) with lines lt 7 title sprintf("context shift, %d rows, keep 0", window), \
     data using 1:(column("shift4_log_ppl")) with lines lt 8 \
         title sprintf("context shift, %d rows, keep %d (llama.cpp: kept tokens moved with the rest)", window, sinks), \
     data using 1:(column("recompute_log_ppl")) with points lt 5 \
         title sprintf("first token + last %d recomputed from position 0 (sampled steps)", window - 1)
