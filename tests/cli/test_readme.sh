# test_readme.sh: the README's commands run as printed. Every indented
# `kvscope ...` line of README.md that needs no terminal is run (its
# trailing comment dropped) and must exit 0 with output; the tour's claims
# are checked against what the commands print.

readme_cmds=$(mktemp)
sed -n 's/^    kvscope \(.*\)$/\1/p' README.md | sed 's/  *#.*$//' >"$readme_cmds"
n_cmds=0
while IFS= read -r args; do
    case "$args" in
    view*|plot\ --all*|lesson*|"") continue ;;  # a terminal, or most of a minute
    eval\ --model\ kjv-base\ --split\ validation\ --tokens\ 2048*) continue ;; # tour 4, below
    train\ *|run\ --weights\ my.kvw*) continue ;; # need `make corpus`; test_train.sh trains and runs a .kvw
    esac
    n_cmds=$((n_cmds + 1))
    eval "run readme $KV $args"
    if [ "$status" -eq 0 ] && [ -s "$out" ]; then ok "README: kvscope $args"
    else bad "README: kvscope $args" "exit $status" "stderr: $(head -c 300 "$err")"; fi
done <"$readme_cmds"
rm -f "$readme_cmds"
[ "$n_cmds" -ge 8 ] && ok "README: $n_cmds commands found and run" || bad "README: commands found" "only $n_cmds"

# tour 2: identical tokens, and the ratio of rows the text gives
run "README tour 2" $KV run --compare
grep -q '^tokens identical: yes$' "$out" && grep -q '(13.27x)$' "$out" && grep -q '13.27x the token rows' README.md &&
    ok "README tour 2: identical tokens, 13.27x the rows, as the text says" ||
    bad "README tour 2: identical tokens, 13.27x the rows, as the text says" "$(grep -E '^tokens identical|^token rows' "$out")"

# tour 4: the window's and the full cache's bits per byte, as printed in the text
if [ -n "${KVSCOPE_SANITIZED:-}" ]; then
    ok "README tour 4: skipped under the sanitizers (2,048 tokens through three caches)"
else
    run "README tour 4" $KV eval --model kjv-base --split validation --tokens 2048 --prefill 1024 \
        --cache ring:window=1024,pass=1024 --cache ring:window=1020,sinks=4,pass=1024 --paired 2,1
    win=$(awk '$1 == "ring:window=1024,pass=1024" { printf "%.3f", $2 }' "$out")
    full=$(awk '$1 == "contiguous" { printf "%.3f", $2 }' "$out")
    # the window against the full cache: "-0.1867 [-0.255, -0.120] better", as the text words it
    vs=$(awk '$1 == "ring:window=1024,pass=1024" && $8 == "better" { gsub(/[][,]/, "", $6); gsub(/[][,]/, "", $7);
        printf "scores %.3f bits per byte better, between %.3f and %.3f,", -$5, -$7, -$6 }' "$out")
    # the sinks against the window: "bits/byte -0.0012 [-0.0059, +0.0031] same", as the text words it
    pair=$(sed -n 's/^  ring:window=1020,sinks=4,pass=1024 - ring:window=1024,pass=1024: bits\/byte \([-+][0-9.]*\) \[\([-+][0-9.]*\), \([-+][0-9.]*\)\] same;.*/its bits per byte by \1, between \2 and \3: the/p' "$out" |
        sed 's/by +/by /')
    text=$(tr '\n' ' ' <README.md)
    if [ "$status" -eq 0 ] && [ -n "$win" ] &&
        printf '%s' "$text" | grep -q "the window scores $win, the full cache $full\. " && [ -n "$vs" ] &&
        printf '%s' "$text" | grep -qF "$vs" && [ -n "$pair" ] && printf '%s' "$text" | grep -qF "$pair"
    then ok "README tour 4: the window $win, the full cache $full; $vs; $pair"
    else bad "README tour 4: the window's and the full cache's bits per byte as the text gives them" \
        "exit $status, window '$win', full '$full', '$vs', '$pair'" "$(head -c 1200 "$out")"; fi
fi

# the trained models' table: parameters, context and held-out bits per byte as their sidecars record them
for side in data/weights/*.kvw.json; do
    name=$(jq -r .model "$side")
    params=$(jq -r .parameters "$side" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta')
    ctx=$(sed -n 's/^max_seq_len *= *//p' "data/models/$name.ini")
    bpb=$(jq -r .valid_bits_per_byte "$side" | awk '{ printf "%.3f", $1 }')
    row="| $name | $params | $ctx | $bpb |"
    grep -qF "$row" README.md && ok "README: $row, as $side records" ||
        bad "README: the row of $name as its sidecar records" "want '$row'" "$(grep -F "| $name |" README.md)"
done
