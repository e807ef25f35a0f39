# test_view_tmux.sh: the real binary in a real terminal (tmux): open, step,
# back, play and pause, help, switch cache, resize down to 20x8 and back,
# quit; the process exits 0 and the terminal is restored (stty settings
# before and after are the same, the shell prompt is back). Then an unknown
# TERM, a signal, the example's counters at 160x50, --batch 3's shared pages
# and copy on write, and random keys with resizes. Runs on a private tmux
# server, so it never touches the user's sessions.

if ! command -v tmux >/dev/null 2>&1; then
    bad "tmux is needed for the end-to-end view test (make deps installs it)"
else
    tsock="kvscope-test-$$"
    tdir=$(mktemp -d)
    T() { tmux -L "$tsock" -f /dev/null "$@"; }
    # wait_for PATTERN [SECONDS]: until the pane shows PATTERN (grep -E)
    wait_for() {
        i=0
        while [ "$i" -lt "$((${2:-5} * 20))" ]; do
            T capture-pane -p -t v >"$tdir/pane" 2>/dev/null
            grep -Eq -- "$1" "$tdir/pane" && return 0
            sleep 0.05
            i=$((i + 1))
        done
        return 1
    }
    # at_size W H: resize the window while the shell waits at its prompt, and
    # go on once the shell's terminal has that size, so a program started
    # next reads it (on a busy machine the two can lag)
    at_size() {
        T resize-window -t v -x "$1" -y "$2"
        T send-keys -t v "clear; stty size" Enter
        wait_for "^$2 $1\$" 10 || bad "tmux: the pane takes the size $1x$2" "$(cat "$tdir/pane")"
    }
    # step NAME PATTERN KEYS...: send keys, expect PATTERN on screen
    step() {
        name=$1 pat=$2
        shift 2
        T send-keys -t v "$@"
        if wait_for "$pat"; then ok "tmux: $name"
        else bad "tmux: $name" "want /$pat/ on screen; the pane:" "$(cat "$tdir/pane")"; fi
    }

    T new-session -d -s v -x 120 -y 40 "env PS1='$ ' KVSCOPE_DATA=data sh"
    T set-option -t v remain-on-exit on >/dev/null
    wait_for '^\$' 5
    T send-keys -t v "stty -a >$tdir/before; $KV; echo EXIT=\$?; stty -a >$tdir/after" Enter
    if wait_for 'kvscope +\[1 example\]' 10; then ok "tmux: kvscope opens the view on the worked example"
    else bad "tmux: kvscope opens the view on the worked example" "$(cat "$tdir/pane")"; fi
    step "Space runs the prefill" '1/4 passes' Space
    step "Right steps" 'Step 1, decode' Right
    step "Left goes back (replay)" 'Step 0, prefill' Left
    step "? shows help" 'help: keys and legend' '?'
    step "any key closes help" 'summary: the document' x
    step "2 opens the simulation" '\[2 simulation\]' 2
    step "p plays" 'play 10/s' p
    sleep 0.4
    step "p pauses, some passes later" 'paused  [1-9][0-9]*/32 passes' p
    step "c lists caches" 'choose a cache' c
    step "a choice switches the cache" 'cache now dynamic' Down Enter
    step "the new cache is on screen" 'cache dynamic' Space
    T resize-window -t v -x 20 -y 8
    if wait_for 'too small' && wait_for 'have 20x8,' && wait_for 'need 80x24'; then ok "tmux: resize to 20x8 says too small"
    else bad "tmux: resize to 20x8 says too small" "$(cat "$tdir/pane")"; fi
    T resize-window -t v -x 120 -y 40
    step "resize back re-lays out" 'cache map|cache dynamic' Space
    step "3 opens compare" 'against|vs the exact run' 3
    step "q quits, the exit status is 0" 'EXIT=0' q
    wait_for '^\$ *$' 5
    if [ -s "$tdir/before" ] && cmp -s "$tdir/before" "$tdir/after"; then ok "tmux: terminal settings restored (stty -a)"
    else bad "tmux: terminal settings restored (stty -a)" "$(diff "$tdir/before" "$tdir/after" | head -5)"; fi

    # an unknown TERM: one clean line, exit 2
    T send-keys -t v "clear; TERM=bogus-term $KV; echo EXIT=\$?" Enter
    if wait_for 'EXIT=2' && grep -q "kvscope: unknown terminal type 'bogus-term'" "$tdir/pane"; then
        ok "tmux: unknown TERM is a clean error"
    else bad "tmux: unknown TERM is a clean error" "$(cat "$tdir/pane")"; fi

    # a signal: the terminal comes back and the status says which
    T send-keys -t v "clear; $KV view --model tiny; echo EXIT=\$?; stty -a >$tdir/after2" Enter
    wait_for '\[2 simulation\]' 10
    kpid=$(ps -o pid= --ppid "$(T list-panes -t v -F '#{pane_pid}')" | head -n 1)
    [ -n "$kpid" ] && kill -TERM $kpid
    if wait_for 'EXIT=143' 8 && cmp -s "$tdir/before" "$tdir/after2"; then ok "tmux: SIGTERM restores the terminal (exit 143)"
    else bad "tmux: SIGTERM restores the terminal (exit 143)" "$(cat "$tdir/pane")"; fi

    # a real shape: a pass takes seconds, so the bottom line shows its
    # progress, and q stops the pass and quits. A prefill of 64 tokens runs
    # for half a minute or more here; the view must be gone well before.
    T send-keys -t v "clear; $KV view --preset marlin --prompt-len 64; echo EXIT=\$?; stty -a >$tdir/after3" Enter
    if wait_for 'building marlin-gqa-32l.s weights' 10 && wait_for '\[2 simulation\]' 60; then
        ok "tmux: view --preset marlin says it builds the weights, then opens"
    else bad "tmux: view --preset marlin says it builds the weights, then opens" "$(cat "$tdir/pane")"; fi
    # the line comes when the first layer is done: seconds here, several
    # times that in the sanitizer's build, so this wait is longer
    T send-keys -t v Space
    if wait_for 'computing: layer [0-9]+ of 32' 30; then ok "tmux: a pass of marlin shows its progress"
    else bad "tmux: a pass of marlin shows its progress" "want /computing: layer [0-9]+ of 32/ on screen; the pane:" \
        "$(cat "$tdir/pane")"; fi
    T send-keys -t v q
    if wait_for 'EXIT=0' 10 && cmp -s "$tdir/before" "$tdir/after3"; then
        ok "tmux: q stops a long pass and quits, the terminal restored"
    else bad "tmux: q stops a long pass and quits, the terminal restored" "$(cat "$tdir/pane")"; fi

    # a cache that evicts: the status line counts the rows attention read
    # (2 sinks + a window of 8), not the 28 positions of the sequence
    T send-keys -t v "clear; $KV view --model tiny --cache ring:window=8,sinks=2; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    for _ in $(seq 21); do T send-keys -t v Space; done
    if wait_for 'Step 20 decode: .*, 10 cached rows read of 28 positions' 8; then
        ok "tmux: ring:window=8,sinks=2 reads 10 rows at step 20"
    else bad "tmux: ring:window=8,sinks=2 reads 10 rows at step 20" "$(cat "$tdir/pane")"; fi
    T send-keys -t v q
    wait_for 'EXIT=0' 5

    # a tall terminal: the worked example shows the pass's counters under its
    # table, and its sub-millisecond times are marked as timer noise
    at_size 160 50
    T send-keys -t v "clear; $KV; echo EXIT=\$?" Enter
    wait_for 'kvscope +\[1 example\]' 10
    step "160x50: the example shows the pass's counters" 'counters; uncached: measured' Space
    if wait_for 'times under 1 ms are timer-noise scale' 3; then ok "tmux: sub-ms times carry the timer-noise note"
    else bad "tmux: sub-ms times carry the timer-noise note" "$(cat "$tdir/pane")"; fi
    T send-keys -t v q
    wait_for 'EXIT=0' 5

    # real times against a DRAM roof of 1 kB/s: every pass is above it, and
    # the counters and the roofline panel say "from cache", not a share
    T send-keys -t v "clear; KVSCOPE_ROOFS=0.000001,100 $KV view --model tiny; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    step "roofs given: the roofline panel names them" 'roofline.*roofs: KVSCOPE_ROOFS' Space
    step "a pass above the DRAM roof: from cache, in the counters and on the roofline" \
        'from cache: [0-9.]+x the DRAM roof' Space
    if grep -q 'C from cache' "$tdir/pane" && grep -Eq '^% of 1e-06 GB/s +cache +cache' "$tdir/pane"; then
        ok "tmux: the newest point is labelled 'from cache', its share cell says cache"
    else bad "tmux: the newest point is labelled 'from cache', its share cell says cache" "$(cat "$tdir/pane")"; fi
    T send-keys -t v q
    wait_for 'EXIT=0' 5

    # --batch 3 on pages: shared pages, prefix hits and a copy on write, live
    T send-keys -t v "clear; $KV view --model tiny --cache paged:page=3 --batch 3; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    step "--batch 3: the prefill shares pages by prefix and fork" 'shared 3  prefix hits 2  copy-on-write 0' Space
    step "--batch 3: the first decode copies the forked page" 'shared 2  prefix hits 2  copy-on-write 1' Space
    T send-keys -t v q
    wait_for 'EXIT=0' 5

    # at 80x24: t opens the line on the old prompt, selected, and typing
    # replaces it; a prompt too long is warned of, and Enter keeps it in the
    # line with why; a cut status line ends in an ellipsis; --serve's key bar
    # has no key that does not apply; s shows another sequence's map
    at_size 80 24
    T send-keys -t v "clear; $KV view --model kjv-tiny --prompt 'In the beginning'; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    step "80x24: t opens the old prompt, selected" 'selected: typing replaces it' t
    step "80x24: typing replaces the selection" '│ > God(█|#) +│' G o d
    step "80x24: Enter runs the typed prompt" 'prompt now [0-9]+ tokens?; the first pass' Enter
    T send-keys -t v q
    wait_for 'EXIT=0' 5
    T send-keys -t v "clear; $KV view --model kjv-tiny --prompt 'In the' --tokens 120; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    T send-keys -t v t End
    T send-keys -t v -l ' and and and and and and and and'
    if wait_for "11 tokens and 120 to generate: more than the model's 128 positions"; then
        ok "tmux: 80x24: a prompt too long is warned of as it is typed"
    else bad "tmux: 80x24: a prompt too long is warned of as it is typed" "$(cat "$tdir/pane")"; fi
    T send-keys -t v Enter
    if wait_for 'needs 130 positions' && grep -q 'type a prompt' "$tdir/pane" && grep -q '> In the and and' "$tdir/pane"
    then ok "tmux: 80x24: Enter on a prompt too long keeps the line, the text and why"
    else bad "tmux: 80x24: Enter on a prompt too long keeps the line, the text and why" "$(cat "$tdir/pane")"; fi
    step "80x24: Esc keeps the old prompt" 'Nothing has run yet' Escape
    T send-keys -t v q
    wait_for 'EXIT=0' 5
    T send-keys -t v "clear; $KV view --model tiny --cache ring:window=8,sinks=2; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    for _ in $(seq 21); do T send-keys -t v Space; done
    if wait_for '^Step 20 decode: .*(…|\.\.\.) *$' 8; then ok "tmux: 80x24: the cut status line ends in an ellipsis"
    else bad "tmux: 80x24: the cut status line ends in an ellipsis" "$(cat "$tdir/pane")"; fi
    T send-keys -t v q
    wait_for 'EXIT=0' 5
    T send-keys -t v "clear; $KV view --serve; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    if wait_for 'Spc/(→|>) step' && ! grep -Eq ' c cache | m model | t prompt |Tab panel|\[ \] layer' "$tdir/pane"
    then ok "tmux: 80x24: --serve's key bar lists no key that does not apply"
    else bad "tmux: 80x24: --serve's key bar lists no key that does not apply" "$(cat "$tdir/pane")"; fi
    step "80x24: --serve: c says why it does not apply" 'the cache list is for a decoder' c
    T send-keys -t v q
    wait_for 'EXIT=0' 5
    T send-keys -t v "clear; $KV view --model tiny --cache paged:page=3 --batch 3; echo EXIT=\$?; stty -a >$tdir/after4" Enter
    wait_for '\[2 simulation\]' 10
    step "80x24: --batch 3: the key bar has s" ' s sequence ' Space
    step "80x24: s shows sequence 1's map" 'cache paged:page=3, sequence 1 of 3' s
    step "80x24: q quits, the exit status is 0" 'EXIT=0' q
    # (the size is the window's: compare the settings after the first line)
    if [ -s "$tdir/after4" ] && [ "$(tail -n +2 "$tdir/before")" = "$(tail -n +2 "$tdir/after4")" ]; then
        ok "tmux: 80x24: terminal settings restored (stty -a)"
    else bad "tmux: 80x24: terminal settings restored (stty -a)" "$(diff "$tdir/before" "$tdir/after4" | head -5)"; fi
    at_size 120 40

    # random keys, interleaved with resizes: no crash, q still quits
    T send-keys -t v "clear; $KV view --model tiny --tokens 24; echo EXIT=\$?" Enter
    wait_for '\[2 simulation\]' 10
    python3 - >"$tdir/keys" <<'EOF'
import random
r = random.Random(7)
pool = list("prcm123?[]{}hlxjk+-=_") + ["Space", "Left", "Right", "Up", "Down", "Tab", "BTab", "Enter",
        "Escape", "F1", "PPage", "NPage", "Home", "End"]
for chunk in range(12):
    print(" ".join(r.choice(pool) for _ in range(20)))
    print("RESIZE %d %d" % (r.randint(10, 200), r.randint(5, 60)))
EOF
    while read -r line; do
        case $line in
        RESIZE*) set -- $line; T resize-window -t v -x "$2" -y "$3" ;;
        *) # shellcheck disable=SC2086
           T send-keys -t v -- $line ;;
        esac
        sleep 0.05
    done <"$tdir/keys"
    T resize-window -t v -x 120 -y 40
    sleep 0.3
    T send-keys -t v Escape
    sleep 0.1
    T send-keys -t v Escape
    sleep 0.1
    T send-keys -t v q
    if wait_for 'EXIT=0' 10; then ok "tmux: 240 random keys and 12 resizes, then q: exit 0"
    else bad "tmux: 240 random keys and 12 resizes, then q: exit 0" "$(cat "$tdir/pane")"; fi

    T kill-server 2>/dev/null
    rm -rf "$tdir"
fi
