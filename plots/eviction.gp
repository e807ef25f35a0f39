# eviction.gp: figure 8 of `kvscope plot`: eviction policies at an equal
# memory budget on structured workloads, measured against an exact shadow.
# Top: the attention mass each policy keeps, per workload, at one budget
# (bars), with the step where its greedy tokens first differ. Bottom: the
# mass kept against the budget on the retrieval and heavy-hitter workloads.
#
# usage: gnuplot -c eviction.gp eviction.tsv OUT TERM
#   eviction.tsv  kvscope's data: one row per (workload, policy) at one budget;
#                 eviction.budget.tsv (the same columns, one row per
#                 (workload, policy, budget)) and eviction.labels.gp sit beside it
#   OUT           the image file, or - for the terminal
#   TERM          png (default), svg or dumb

data = ARG1
out = ARGC >= 2 ? ARG2 : "-"
term = ARGC >= 3 ? ARG3 : "png"
base = data[1:strlen(data) - 4]
sweep = base . ".budget.tsv"
load base . ".labels.gp"

if (term eq "png") {
    set terminal pngcairo size 1600,1200 font "sans,11" noenhanced
} else { if (term eq "svg") {
    set terminal svg size 1600,1200 font "sans,11" noenhanced
} else { if (term eq "dumb") {
    set terminal dumb size 130,160 noenhanced
} else {
    exit error "eviction.gp: TERM must be png, svg or dumb"
}}}
if (out ne "-") { set output out }

set datafile separator "\t"
set datafile columnheaders   # row 1 names the columns
# one colour per policy, the same in every panel
set linetype 1 lc rgb "#D55E00" lw 2.5 pt 7 ps 1.3
set linetype 2 lc rgb "#0072B2" lw 2.5 pt 5 ps 1.3
set linetype 3 lc rgb "#009E73" lw 2.5 pt 9 ps 1.5
set linetype 4 lc rgb "#CC79A7" lw 2.5 pt 11 ps 1.5
set linetype 5 lc rgb "#E69F00" lw 2.5 pt 13 ps 1.5
set linetype 6 lc rgb "#000000" lw 1.5 dt 2

# column values of one policy only (NaN elsewhere), and of one workload too
of(p, v) = column("policy_index") == p ? v : NaN
on(w, p, v) = strcol("workload") eq w && column("policy_index") == p ? v : NaN
# the bars of policy p sit side by side around their workload's x
bw = 0.16
bx(p) = column("workload_index") + (p - 2) * bw

# (a) across the top, (b) and (c) side by side below it; in a terminal, where
# width is short, all three one above the other
dumb = term eq "dumb"
set multiplot title title font ",14"
set label 101 caption at screen 0.01, screen (dumb ? 0.065 : 0.115) left font ",9"

# top: every workload, every policy, at one budget
set size 1, (dumb ? 0.33 : 0.45)
set origin 0, (dumb ? 0.63 : 0.48)
set title sprintf("(a) at %d rows per layer: the least attention mass each keeps (eviction.tsv also has the " . \
                  "first of the %d steps whose greedy token differs)", budget, generated)
set xrange [-0.6:4.6]
set xtics ("no structure" 0, "sink" 1, "local" 2, "heavy hitters" 3, "retrieval" 4) scale 0
set xlabel "workload (attention structure on the scores)"
set ylabel "least attention mass kept (fraction of the exact weight)"
set yrange [0:1.3]   # headroom for the key and the numbers
set ytics 0, 0.2, 1
set grid ytics lc rgb "#dddddd"
set boxwidth bw * 0.9 absolute
set style fill solid 0.85 border -1
set key top left box opaque samplen 2 spacing 1.1 font ",10" maxrows 2 width -2
plot for [p = 0:4] data using (bx(p)):(of(p, column("mass_kept_min"))) with boxes lt p + 1 \
         title value(sprintf("policy%d", p)), \
     for [p = 0:4] data using (bx(p)):(of(p, column("mass_kept_min"))):(sprintf("%.2f", column("mass_kept_min"))) \
         with labels offset 0, 0.7 font ",9" notitle

# bottom: mass kept against the budget, on two workloads
unset label 101
set size (dumb ? 1 : 0.5), (dumb ? 0.27 : 0.35)
set logscale x 2
set format x "%.0f"
set xrange [12:340]
set xtics (16, 32, 64, 128, 256) scale 1
set xlabel "budget B (rows per layer the cache keeps)"
set ylabel "least attention mass kept"
set yrange [0:1.15]
set grid xtics ytics lc rgb "#dddddd"
set key top left box opaque samplen 3 spacing 1.1 font ",9" maxrows 6 width -6
# h2o dashed: where it keeps what window+sinks keeps, both lines stay visible
do for [i = 0:1] {
    w = i == 0 ? "retrieval" : "heavy"
    if (dumb) { set origin 0, 0.35 - i * 0.28 } else { set origin i * 0.5, 0.13 }
    set title i == 0 ? sprintf("(b) retrieval: the question at the prompt's end asks for the token at position %d", needle) \
                     : "(c) heavy hitters: a few positions every later query weighs more"
    plot sweep using (on(w, 0, column("budget_rows"))):"mass_kept_min" with linespoints lt 1 \
             title "window of B", \
         sweep using (on(w, 1, column("budget_rows"))):"mass_kept_min" with linespoints lt 2 \
             title sprintf("%d sinks + window of B - %d", sinks, sinks), \
         sweep using (on(w, 2, column("budget_rows"))):"mass_kept_min" with linespoints lt 3 dt 2 \
             title "heavy hitters (H2O), half recent", \
         sweep using (on(w, 3, column("budget_rows"))):"mass_kept_min" with linespoints lt 4 \
             title sprintf("block-sparse: the newest %d pages of B/%d rows", sparse_pages, sparse_pages), \
         sweep using (on(w, 4, column("budget_rows"))):"mass_kept_min" with linespoints lt 5 \
             title sprintf("SnapKV: the last min(B/%d, %d) prompt rows vote", snap_share, chunk), \
         [16:256] x / prompt with lines lt 6 title sprintf("B / %d: B rows' share of uniform attention", prompt)
}
unset multiplot
