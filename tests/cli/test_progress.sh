# test_progress.sh: the progress line of the long commands (app/progress_line.h).
# With stderr a file each prints nothing there; on a terminal (script(1) gives
# the command one, 80 columns) the line shows a count and the time left, is
# never wider than the terminal, and is gone when the work is done: the raw
# bytes replayed in a tmux pane leave the command's own lines and no trace of
# it. --quiet removes it. (bench's line: test_bench.sh.)

pg_tmp=$(mktemp -d)
pg_sock="kvscope-progress-$$"
if ! command -v script >/dev/null 2>&1 || ! command -v tmux >/dev/null 2>&1; then
    bad "script(1) (bsdutils) and tmux (make deps-test installs it) are needed for the progress line tests"
fi

# on_tty NAME CMD: run CMD (one shell string) on a pseudo-terminal of 80
# columns; its stdout and stderr as the terminal got them go to $out
on_tty() {
    name=$1
    timeout 120 script -qec "stty cols 80 rows 24; $2" /dev/null </dev/null >"$out" 2>"$err"
    status=$?
}

# replay: what a terminal of 80 columns shows after the bytes in $out, into
# $pg_tmp/screen (the scrollback too)
replay() {
    cp "$out" "$pg_tmp/raw"
    tmux -L "$pg_sock" -f /dev/null new-session -d -s r -x 80 -y 40 \
        "cat '$pg_tmp/raw'; printf '\nREPLAYED\n'; sleep 30"
    i=0
    while [ "$i" -lt 100 ]; do
        tmux -L "$pg_sock" capture-pane -p -S -500 -t r >"$pg_tmp/screen" 2>/dev/null
        grep -q '^REPLAYED' "$pg_tmp/screen" && break
        sleep 0.05
        i=$((i + 1))
    done
    tmux -L "$pg_sock" kill-server 2>/dev/null
}

# the drawings of the line: the pieces between carriage returns that begin with PREFIX
drawings() { tr '\r' '\n' <"$out" | grep -- "^$1"; }

# a figure whose runs go to the pool's threads: the count comes from the calling thread
on_tty "plot eviction on a terminal" "$KV plot eviction --quick --out $pg_tmp/plots"
drawings 'kvscope plot: figure' >"$pg_tmp/lines"
wide=$(awk 'length > 79' "$pg_tmp/lines" | head -n 2)
if [ "$status" -eq 0 ] && grep -Eq '^kvscope plot: figure 1 of 1, eviction: run [0-9]+ of 65, [0-9.]+ s, about [0-9.]+ s left$' \
    "$pg_tmp/lines" && [ -z "$wide" ]; then ok "plot on a terminal: a count of the figure's runs and the time left, in 80 columns"
else bad "plot on a terminal: a count of the figure's runs and the time left, in 80 columns" "exit $status" \
    "wider than 79: $wide" "drawings: $(head -c 400 "$pg_tmp/lines")"; fi
replay
if grep -q '^ 8 eviction ' "$pg_tmp/screen" && grep -q '^done in ' "$pg_tmp/screen" &&
    ! grep -q 'kvscope plot: figure\|left' "$pg_tmp/screen"; then ok "plot on a terminal: the line is erased, nothing of it left"
else bad "plot on a terminal: the line is erased, nothing of it left" "screen: $(grep -v '^$' "$pg_tmp/screen" | head -c 600)"; fi
on_tty "plot --quiet on a terminal" "$KV plot step-time --quick --quiet --out $pg_tmp/plots"
if [ "$status" -eq 0 ] && grep -q '^ 3 step-time ' "$out" && ! grep -q 'kvscope plot: figure\|left' "$out"
then ok "plot --quiet on a terminal: no progress line"
else bad "plot --quiet on a terminal: no progress line" "exit $status" "$(head -c 400 "$out")"; fi

# lesson check prints a line per check between its drawings: each on a clean line
lesson_state=$(mktemp -d)
on_tty "lesson check on a terminal" "env XDG_STATE_HOME=$lesson_state HOME=$lesson_state $KV lesson check 1"
drawings 'kvscope lesson check 1: ' >"$pg_tmp/lines"
replay
if [ "$status" -eq 0 ] && grep -Eq '^kvscope lesson check 1: step [0-9]+ of 9, ' "$pg_tmp/lines" &&
    [ "$(grep -c '^  ok    why-cache\.' "$pg_tmp/screen")" -eq 9 ] && ! grep -q 'kvscope lesson check' "$pg_tmp/screen"
then ok "lesson check on a terminal: a step count, then each check's line clean, nothing left"
else bad "lesson check on a terminal: a step count, then each check's line clean, nothing left" "exit $status" \
    "drawings: $(head -c 300 "$pg_tmp/lines")" "screen: $(grep -v '^$' "$pg_tmp/screen" | head -c 900)"; fi
on_tty "lesson check --quiet on a terminal" "env XDG_STATE_HOME=$lesson_state HOME=$lesson_state $KV lesson check 1 --quiet"
if [ "$status" -eq 0 ] && grep -q '9 of 9 checks pass' "$out" && ! grep -q 'kvscope lesson check' "$out"
then ok "lesson check --quiet on a terminal: no progress line"
else bad "lesson check --quiet on a terminal: no progress line" "exit $status" "$(head -c 400 "$out")"; fi
rm -rf "$lesson_state"

# lesson lint writes its findings between the checks it runs: each on a clean line
mkdir -p "$pg_tmp/course"
printf '{ "lessons": [ { "id": "two", "title": "Two checks", "file": "01-two.md" } ] }\n' >"$pg_tmp/course/manifest.json"
for c in a:256 b:300; do
    printf '\n```check\nid: two.%s\nrun: kvscope calc --model tiny --format json\nvalue: formats[format=f16].bytes_per_token\nexpect: %s\nhint: Bytes a token.\n```\n' \
        "${c%%:*}" "${c#*:}"
done | { printf '# 1. Two\n\nThe bytes of a token, twice.\n'; cat; } >"$pg_tmp/course/01-two.md"
on_tty "lesson lint on a terminal" "env KVSCOPE_LESSONS=$pg_tmp/course $KV lesson lint"
drawings 'kvscope lesson lint: ' >"$pg_tmp/lines"
replay
if [ "$status" -eq 1 ] && grep -Eq '^kvscope lesson lint: command [0-9] of 2, ' "$pg_tmp/lines" &&
    grep -q '^  FAIL  check two.b: expected 300, got 256$' "$pg_tmp/screen" &&
    grep -q '^check-lessons: 1 lessons written' "$pg_tmp/screen" && ! grep -q 'kvscope lesson lint' "$pg_tmp/screen"
then ok "lesson lint on a terminal: a count of its commands, its findings on clean lines, nothing left"
else bad "lesson lint on a terminal: a count of its commands, its findings on clean lines, nothing left" "exit $status" \
    "drawings: $(head -c 300 "$pg_tmp/lines")" "screen: $(grep -v '^$' "$pg_tmp/screen" | head -c 900)"; fi

# the others, short runs: quiet with stderr a file; on a terminal the line
# shows (its label at least) and leaves nothing; with --quiet it does not
tr_args="--model kjv-tiny --text data/text/kjv-valid.txt --valid data/text/kjv-valid.txt --steps 3 --batch 1 --eval-every 2 --eval-windows 1 --out $pg_tmp/w.kvw"
for c in "eval:eval --split validation --tokens 200" "serve:serve --requests 6" \
    "export:export --model small --gguf $pg_tmp/s.gguf" \
    "tokenize --learn:tokenize --learn --text data/text/kjv-valid.txt --vocab 320 --out $pg_tmp/m.txt" \
    "train:train $tr_args"; do
    label=${c%%:*} args=${c#*:}
    run "$label with stderr a file" $KV $args
    if [ "$status" -eq 0 ] && [ ! -s "$err" ]; then ok "$label: nothing on stderr when it is a file"
    else bad "$label: nothing on stderr when it is a file" "exit $status" "stderr: $(head -c 300 "$err")"; fi
    on_tty "$label on a terminal" "$KV $args >/dev/null"
    drawings "kvscope $label" >"$pg_tmp/lines"
    replay
    if [ "$status" -eq 0 ] && [ -s "$pg_tmp/lines" ] && ! grep -q "kvscope $label" "$pg_tmp/screen"
    then ok "$label on a terminal: the progress line shows, then is erased"
    else bad "$label on a terminal: the progress line shows, then is erased" "exit $status" \
        "terminal: $(tr '\r' '\n' <"$out" | head -c 300)" "screen: $(grep -v '^$' "$pg_tmp/screen" | head -c 300)"; fi
    on_tty "$label --quiet on a terminal" "$KV $args --quiet >/dev/null"
    if [ "$status" -eq 0 ] && ! grep -q "kvscope $label" "$out"; then ok "$label --quiet: no progress line"
    else bad "$label --quiet: no progress line" "exit $status" "$(tr '\r' '\n' <"$out" | head -c 300)"; fi
done
rm -rf "$pg_tmp"
