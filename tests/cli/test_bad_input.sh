# test_bad_input.sh: the bad inputs of an independent reliability run (issue
# 21), kept as a table: the exit status each must give and the first words
# of its one error line. Run by `make test` on the release build and under
# the sanitizers. The rule (README, man page): 2 when the request could
# never be met as written, 1 when the machine or the filesystem failed it.

bi_tmp=$(mktemp -d)
esc=$(printf '\033')
printf '[model]\n%s[31mkey = 3\n' "$esc" >"$bi_tmp/garbage.ini"
big=1152921504606846977 # x 16 wraps a 64-bit product to 16

# status | first words of the message | command (eval'd: $KV, $bi_tmp, $esc, $big)
while IFS='|' read -r want words cmd; do
    case $want in '' | \#*) continue ;; esac
    eval "set -- $cmd"
    timeout 60 "$@" >"$out" 2>"$err"
    status=$?
    lines=$(wc -l <"$err")
    first=$(head -n 1 "$err")
    case $first in
    "kvscope: $words"*) words_ok=1 ;;
    *) words_ok=0 ;;
    esac
    if [ "$status" -eq "$want" ] && [ "$lines" -eq 1 ] && [ "$words_ok" -eq 1 ]; then ok "bad input, exit $want: $cmd"
    else bad "bad input: $cmd" "want: exit $want, one line 'kvscope: $words...'" "got: exit $status, $lines lines" \
        "stderr: $(head -c 300 "$err")"; fi
done <<'TABLE'
# 1. sizes that wrapped: the prompt buffer was 32 bytes and the copy ran past it (exit 139)
2|--batch 1152921504606846977 (the weights|$KV run --model tiny --tokens 1 --prompt-len 8 --batch $big
2|--batch 1152921504606846977 (the weights|$KV run --model tiny --tokens 1 --prompt-ids 1,2,3,4 --batch $big
2|--batch 1152921504606846977 (the weights|$KV dump --model tiny --tokens 1 --batch $big --out $bi_tmp/d1
# 2. refused before the work it guards (it built 3.9 GB of prompts first)
2|--batch 1000000000 (the weights|$KV run --model tiny --tokens 1 --prompt-len 1 --batch 1000000000
2|--batch 99999999999 (the weights|$KV run --model tiny --tokens 1 --batch 99999999999
2|serve: 999999999999999 requests needs|$KV serve --requests 999999999999999
# 5. the user's control bytes are escaped, not sent to the terminal
2|unknown cache '\x1b[31mred'|$KV run --model tiny --cache "${esc}[31mred"
2|unknown command '\x1b[31mred'|$KV "${esc}[31mred"
2|garbage.ini line 2: unknown key '\x1b[31mkey'|$KV run --model $bi_tmp/garbage.ini
# 7. one rule for the exit status
2|cache 'paged' needs|$KV run --model tiny --cache paged:page=99999999999
2|cache 'paged' needs|$KV run --model tiny --cache paged:pages=99999999999
1|model 'tiny': weights file 'nosuch.txt' not found|$KV run --model tiny --set weights=nosuch.txt
1|--out /proc/kvscope-x: cannot create|$KV plot memory --out /proc/kvscope-x
1|--out /proc/kvscope-x: cannot create|$KV dump --model tiny --out /proc/kvscope-x
# a checkpoint's tokenizer (issue 16): a missing file, a file that is none, a model on ids
1|kvscope-no-such.gguf: cannot open|$KV tokenize --weights kvscope-no-such.gguf hi
2|README.md: neither a GGUF file nor a llama2.c checkpoint|$KV tokenize --weights README.md hi
2|tokenize: one of --tokenizer, --model and --weights|$KV tokenize --weights README.md --model tiny hi
1|kvscope-no-such-dir/x.gguf.tmp: cannot create|$KV export --model tiny --gguf kvscope-no-such-dir/x.gguf
TABLE

# 3. options beyond max_seq_len are kept at it: a fork copies what a sequence can hold
run "beam search, mixed:hot=2000000" $KV run --model encdec --beams 4 --tokens 8 --cache mixed:hot=2000000
copied=$(sed -n 's/^copies: .* drops; \([0-9]*\) B copied.*/\1/p' "$out")
if [ "$status" -eq 0 ] && [ -n "$copied" ] && [ "$copied" -lt 10000000 ]; then ok "beam forks of mixed:hot=2000000 copy $copied B"
else bad "beam forks of mixed:hot=2000000" "want: exit 0, under 10 MB copied" "got: exit $status, '$copied'"; fi

# 7. a refused figure leaves no folder behind
run "plot refused" $KV plot 1 --model llama-3-8b --out "$bi_tmp/p/q"
if [ "$status" -eq 2 ] && [ ! -e "$bi_tmp/p" ]; then ok "plot refused: exit 2, --out's folders removed"
else bad "plot refused" "want: exit 2, no $bi_tmp/p" "got: exit $status, $(ls -d "$bi_tmp"/p 2>&1)"; fi

# 7. example: a lossy cache's difference is reported, exit 0
expect_ok "example with a lossy cache" 'a lossy cache: the difference is what it gives up' \
    $KV example --cache ring:window=1

# 8. calc counts what fits: f16 at 2^45 tokens is 2^62 B; the MHA equivalent passes 2^64
expect_ok "calc: a total of 2^62 B" 'total +4,611,686,018,427,387,904 B' \
    $KV calc --model llama-3-8b --context 35184372088832 --elem f16
expect_ok "calc: the comparison that passes 2^64 is named" 'passes 2\^64 B' \
    $KV calc --model llama-3-8b --context 35184372088832 --elem f16

# 4. writes that fail half-way: a file size limit stands in for a full disk
# (SIGXFSZ ignored, so a write past it fails with EFBIG as on ENOSPC)
full_disk() { (trap '' XFSZ; ulimit -f "$1"; shift; "$@") >"$out" 2>"$err"; status=$?; }
full_disk 1 $KV plot memory --term png --out "$bi_tmp/f1"
if [ "$status" -eq 1 ] && grep -q 'writing .*memory.tsv failed' "$err" && [ ! -e "$bi_tmp/f1" ]; then
    ok "full disk: a .tsv that cannot be written, exit 1, nothing left"
else bad "full disk, .tsv" "want: exit 1, no $bi_tmp/f1" "got: exit $status, $(ls -A "$bi_tmp/f1" 2>&1)" \
    "stderr: $(head -c 300 "$err")"; fi
if command -v gnuplot >/dev/null 2>&1; then
    for term in png svg; do
        full_disk 16 $KV plot memory --term $term --out "$bi_tmp/f-$term"
        if [ "$status" -eq 1 ] && grep -q "cut short" "$err" && [ ! -e "$bi_tmp/f-$term" ]; then
            ok "full disk: gnuplot's $term cut short, exit 1, nothing left"
        else bad "full disk, $term" "want: exit 1, 'cut short', no folder" "got: exit $status" \
            "stderr: $(head -c 300 "$err")" "left: $(ls -A "$bi_tmp/f-$term" 2>&1)"; fi
    done
fi
full_disk 1 $KV dump --model tiny --tokens 2 --out "$bi_tmp/d2"
if [ "$status" -eq 1 ] && [ -z "$(ls -A "$bi_tmp" | grep '^d2')" ]; then ok "full disk: dump exits 1 and leaves nothing"
else bad "full disk, dump" "want: exit 1, nothing named d2*" "got: exit $status, $(ls -A "$bi_tmp")"; fi
full_disk 1 $KV export --model tiny --gguf "$bi_tmp/x.gguf"
if [ "$status" -eq 1 ] && [ -z "$(ls -A "$bi_tmp" | grep '^x.gguf')" ]; then ok "full disk: export exits 1 and leaves nothing"
else bad "full disk, export" "want: exit 1, nothing named x.gguf*" "got: exit $status, $(ls -A "$bi_tmp")"; fi

# 6. lessons: a NUL byte, or no checks, is refused and never marked done
mkdir -p "$bi_tmp/course" "$bi_tmp/state"
cp -r lessons/. "$bi_tmp/course/"
printf 'x\000y' >>"$bi_tmp/course/01-why-cache.md"
KVSCOPE_LESSONS="$bi_tmp/course" XDG_STATE_HOME="$bi_tmp/state" run "lesson with a NUL byte" $KV lesson check 1
if [ "$status" -eq 1 ] && grep -q 'a NUL byte at offset' "$err"; then ok "lesson with a NUL byte: refused, exit 1"
else bad "lesson with a NUL byte" "want: exit 1, 'a NUL byte at offset'" "got: exit $status" "stderr: $(cat "$err")"; fi
head -c 200 lessons/01-why-cache.md >"$bi_tmp/course/01-why-cache.md"
KVSCOPE_LESSONS="$bi_tmp/course" XDG_STATE_HOME="$bi_tmp/state" run "lesson without checks" $KV lesson check 1
if [ "$status" -eq 1 ] && grep -q 'has no checks' "$err" && [ -z "$(ls -A "$bi_tmp/state")" ]; then
    ok "lesson without checks: refused, exit 1, not marked done"
else bad "lesson without checks" "want: exit 1, 'has no checks', no progress file" "got: exit $status" \
    "stderr: $(cat "$err")" "state: $(ls -AR "$bi_tmp/state")"; fi
echo '{' >"$bi_tmp/course/manifest.json"
KVSCOPE_LESSONS="$bi_tmp/course" run "a broken manifest elsewhere" $KV lesson list
if [ "$status" -eq 1 ] && grep -q "course/manifest.json, line" "$err" && ! grep -q "lessons/manifest.json" "$err"; then
    ok "a broken manifest is named where it is"
else bad "a broken manifest elsewhere" "want: exit 1, its own path" "got: exit $status" "stderr: $(cat "$err")"; fi

rm -rf "$bi_tmp"
