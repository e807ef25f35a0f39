# test_outputs.sh: what a command writes is whole or absent, and what it
# reads is a file (issue 51). Standard output that cannot be written is an
# error (exit 1, one line); an output path that is not a regular file is
# refused (exit 2) and a symlink is written through; a signal or a full disk
# leaves what was there before; an input that is a FIFO or a folder is
# refused at once (exit 2), never waited on.

op_tmp=$(mktemp -d)
# a file size limit stands in for a full disk (SIGXFSZ ignored: the write
# fails with EFBIG, as it would with ENOSPC)
op_full() { (trap '' XFSZ; ulimit -f "$1"; shift; "$@") >"$out" 2>"$err"; status=$?; }
# op_expect NAME CODE WORDS [TEST]: exit CODE, one line "kvscope: WORDS..." on
# stderr, and TEST (a shell condition, eval'd) true
op_expect() {
    if [ "$status" -eq "$2" ] && [ "$(wc -l <"$err")" -eq 1 ] && grep -q -- "^kvscope: $3" "$err" &&
        eval "${4:-true}"; then ok "$1"
    else bad "$1" "want: exit $2, one line 'kvscope: $3...'${4:+, and $4}" "got: exit $status" \
        "stderr: $(head -c 300 "$err")" "files: $(ls -A "$op_tmp" | tr '\n' ' ')"; fi
}

# --- 1. standard output's write errors --------------------------------------------------------
for cmd in "--help" "run --help" "run --model tiny --tokens 2" "run --model tiny --tokens 2 --format tsv" \
    "calc --format json" "tokenize hello" "example"; do
    eval "timeout 60 \$KV $cmd" >/dev/full 2>"$err"
    status=$?
    op_expect "stdout on /dev/full: $cmd, exit 1" 1 "writing standard output"
done
op_full 1 sh -c "\"\$0\" run --model tiny --tokens 40 --format tsv >\"\$1\"" "$KV" "$op_tmp/run.tsv"
op_expect "stdout on a full disk: run --format tsv, exit 1" 1 "writing standard output"
# train --log: whole or absent; a disk that fills mid-run stops it with exit 1, the log not there
printf 'an earlier log\n' >"$op_tmp/kept.tsv"
for log in new.tsv kept.tsv; do
    op_full 1 $KV train --model tiny --text README.md --valid README.md --out "$op_tmp/w.kvw" --steps 40 \
        --seq-len 16 --batch 1 --eval-every 0 --quiet --log "$op_tmp/$log"
    left=$(ls -A "$op_tmp" | grep -c "^$log")
    op_expect "train --log on a full disk: exit 1, $log as it was before" 1 "--log: cannot write" \
        '{ [ "$log" = new.tsv ] && [ "$left" -eq 0 ]; } ||
         { [ "$left" -eq 1 ] && [ "$(cat "$op_tmp/$log")" = "an earlier log" ]; }'
done

# --- 2. an output that is not a regular file is refused; a symlink is written through ----------
mkfifo "$op_tmp/fifo.gguf"
run "export onto a FIFO" $KV export --model tiny --gguf "$op_tmp/fifo.gguf"
op_expect "export onto a FIFO: exit 2, the FIFO stays" 2 "export: --gguf: '$op_tmp/fifo.gguf' is a FIFO" \
    '[ -p "$op_tmp/fifo.gguf" ] && [ ! -e "$op_tmp/fifo.gguf.tmp" ]'
mkdir "$op_tmp/dir.kvw"
run "train --out a folder" $KV train --model tiny --text README.md --valid README.md --out "$op_tmp/dir.kvw" --steps 1
op_expect "train --out a folder: exit 2, before the training" 2 "--out: '$op_tmp/dir.kvw' is a folder" \
    '[ -d "$op_tmp/dir.kvw" ] && [ ! -s "$out" ]'
run "tokenize --learn --out a FIFO" $KV tokenize --learn --text README.md --vocab 260 --out "$op_tmp/fifo.gguf"
op_expect "tokenize --learn --out a FIFO: exit 2, the FIFO stays" 2 "--out: '$op_tmp/fifo.gguf' is a FIFO" \
    '[ -p "$op_tmp/fifo.gguf" ] && [ ! -e "$op_tmp/fifo.gguf.tmp" ]'
printf 'old\n' >"$op_tmp/real.gguf"
ln -s real.gguf "$op_tmp/link.gguf"
run "export through a symlink" $KV export --model tiny --gguf "$op_tmp/link.gguf"
if [ "$status" -eq 0 ] && [ -L "$op_tmp/link.gguf" ] && [ "$(head -c 4 "$op_tmp/real.gguf")" = GGUF ] &&
    [ -z "$(ls -A "$op_tmp" | grep '\.tmp$')" ]; then ok "export through a symlink: the link stays, its target written"
else bad "export through a symlink" "want: exit 0, link.gguf a link, real.gguf a GGUF" "got: exit $status" \
    "$(ls -l "$op_tmp" | head -c 400)" "stderr: $(head -c 300 "$err")"; fi
ln -s nowhere.gguf "$op_tmp/dangling.gguf"
run "export through a dangling symlink" $KV export --model tiny --gguf "$op_tmp/dangling.gguf"
op_expect "export through a dangling symlink: exit 2" 2 \
    "export: --gguf: '$op_tmp/dangling.gguf' is a symlink to nothing" '[ ! -e "$op_tmp/nowhere.gguf" ]'

# --- 3. a signal leaves no debris ---------------------------------------------------------------
# the command runs in the background; the signal goes as soon as its temporary
# shows (a tight poll: the export writes 50 MB, a dump as much); tried up to 3
# times in case the command won the race; killed outright if it never shows
op_signal() { # NAME SIGNAL GLOB CMD...: send SIGNAL (a number) to CMD once GLOB matches in $op_tmp/sig
    name=$1 sig=$2 glob=$3; shift 3
    for try in 1 2 3; do
        rm -rf "$op_tmp/sig"
        mkdir "$op_tmp/sig"
        "$@" >/dev/null 2>&1 &
        pid=$!
        seen=0 n=0
        while [ "$n" -lt 200000 ] && kill -0 "$pid" 2>/dev/null; do
            for f in "$op_tmp"/sig/$glob; do [ -e "$f" ] && seen=1; done
            [ "$seen" -eq 1 ] && break
            n=$((n + 1))
        done
        if [ "$seen" -eq 1 ]; then kill -"$sig" "$pid"
        else kill -9 "$pid" 2>/dev/null; fi # never there: the test fails, bounded
        wait "$pid" 2>/dev/null
        status=$?
        [ "$seen" -eq 1 ] && break
    done
    left=$(ls -A "$op_tmp/sig")
    want=$((128 + sig))
    if [ "$seen" -eq 1 ] && [ "$status" -eq "$want" ] && [ -z "$left" ]; then
        ok "$name: killed by signal $sig, nothing left"
    else bad "$name" "want: the temporary seen, exit $want, nothing left" "got: seen $seen, exit $status" \
        "left: $left"; fi
}
op_signal "export, SIGTERM" 15 'x.gguf.tmp' $KV export --model small --set n_layers=16 --gguf "$op_tmp/sig/x.gguf"
op_signal "dump, SIGHUP" 1 'd.tmp-*' $KV dump --model small --set n_layers=16 --tokens 2 --out "$op_tmp/sig/d"
op_signal "train --log, SIGTERM" 15 'l.tsv.tmp' $KV train --model tiny --text README.md --valid README.md \
    --out "$op_tmp/sig/w.kvw" --steps 5000 --seq-len 16 --batch 1 --eval-every 0 --quiet --log "$op_tmp/sig/l.tsv"
if command -v gnuplot >/dev/null 2>&1; then
    # SIGPIPE: plot writes its progress to a reader that has gone
    { $KV plot --all --quick --out "$op_tmp/figs/new" 2>/dev/null; echo $? >"$op_tmp/plot.rc"; } | head -n 1 >/dev/null
    if [ "$(cat "$op_tmp/plot.rc")" -eq 141 ] && [ ! -e "$op_tmp/figs" ]; then
        ok "plot --all --quick | head -1: killed by SIGPIPE, no folder left"
    else bad "plot --all --quick | head -1" "want: exit 141, no folder" "got: exit $(cat "$op_tmp/plot.rc")" \
        "left: $(ls -AR "$op_tmp/figs" | head -c 300)"; fi
fi

# --- 4. a failed command leaves existing files as they were ------------------------------------
mkdir "$op_tmp/mine"
printf 'my own memory.tsv\n' >"$op_tmp/mine/memory.tsv"
op_full 1 $KV plot memory --term png --out "$op_tmp/mine"
if [ "$status" -eq 1 ] && [ "$(cat "$op_tmp/mine/memory.tsv")" = "my own memory.tsv" ] &&
    [ "$(ls -A "$op_tmp/mine")" = memory.tsv ]; then ok "plot on a full disk: exit 1, the user's memory.tsv as it was"
else bad "plot on a full disk" "want: exit 1, memory.tsv untouched, nothing else" "got: exit $status" \
    "files: $(ls -A "$op_tmp/mine")" "memory.tsv: $(head -c 100 "$op_tmp/mine/memory.tsv")"; fi
if command -v gnuplot >/dev/null 2>&1; then # the data written, the image cut short: all of it put back
    op_full 16 $KV plot memory --term png --out "$op_tmp/mine"
    if [ "$status" -eq 1 ] && [ "$(cat "$op_tmp/mine/memory.tsv")" = "my own memory.tsv" ] &&
        [ "$(ls -A "$op_tmp/mine")" = memory.tsv ]; then ok "plot's image cut short: the user's memory.tsv put back"
    else bad "plot's image cut short" "want: exit 1, memory.tsv as it was" "got: exit $status" \
        "files: $(ls -A "$op_tmp/mine")" "memory.tsv: $(head -c 100 "$op_tmp/mine/memory.tsv")"; fi
fi

# --- 8. an input that is not a regular file is refused, never waited on ------------------------
# a llama2.c checkpoint (dim 8, 1 layer, vocab 4) with a FIFO named tokenizer.bin beside it
mkdir "$op_tmp/l2"
python3 -c 'import struct, sys
d, hid, L, h, kv, V, S = 8, 16, 1, 2, 2, 4, 4
hs = d // h
n = V * d + L * d + L * d * d + 2 * L * d * kv * hs + L * d * d + L * d + 3 * L * d * hid + d + S * hs
f = open(sys.argv[1], "wb")
f.write(struct.pack("<7i", d, hid, L, h, kv, V, S) + struct.pack("<%df" % n, *([0.5] * n)))' "$op_tmp/l2/m.bin"
mkfifo "$op_tmp/l2/tokenizer.bin"
for cmd in "calc" "run --tokens 1" "tokenize hi" "export --gguf $op_tmp/l2/o.gguf"; do
    set -- $cmd
    c=$1
    shift
    timeout 5 $KV $c --weights "$op_tmp/l2/m.bin" "$@" >"$out" 2>"$err"
    status=$?
    op_expect "$c beside a FIFO tokenizer.bin: exit 2 at once" 2 "$op_tmp/l2/tokenizer.bin: not a regular file"
done
mkfifo "$op_tmp/text.fifo" "$op_tmp/model.ini"
timeout 5 $KV eval --text "$op_tmp/text.fifo" >"$out" 2>"$err"
status=$?
op_expect "eval --text a FIFO: exit 2 at once" 2 "'$op_tmp/text.fifo' is a FIFO, not a file"
timeout 5 $KV run --model "$op_tmp/model.ini" >"$out" 2>"$err"
status=$?
op_expect "run --model a FIFO: exit 2 at once" 2 "'$op_tmp/model.ini' is a FIFO, not a file"
# a folder where a file is read: one rule, exit 2
run "train --text a folder" $KV train --model tiny --text "$op_tmp/l2" --valid README.md --out "$op_tmp/x.kvw"
op_expect "train --text a folder: exit 2" 2 "train: '$op_tmp/l2' is a folder, not a file"
run "tokenize --tokenizer a folder" $KV tokenize --tokenizer "$op_tmp/l2" hi
op_expect "tokenize --tokenizer a folder: exit 2" 2 "'$op_tmp/l2' is a folder, not a file"

rm -rf "$op_tmp"
