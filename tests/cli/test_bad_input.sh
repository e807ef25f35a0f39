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

# Issue 51: values that imply work no command could finish or hold, sizes
# beyond the model or the machine, files that lie. Each is refused before
# the work it guards: `timeout 10` makes a regression that starts the work
# (gigabytes of prompt, a billion idle steps, a gigabyte of weights) fail
# rather than hang.
# a llama2.c header (dim 8192, hidden_dim 8, one layer, head, KV head, token
# and position) over the 1 GB of zeros it implies (sparse: no disk used)
printf '\000\040\000\000\010\000\000\000\001\000\000\000\001\000\000\000\001\000\000\000\001\000\000\000\001\000\000\000' \
    >"$bi_tmp/big.bin"
truncate -s $((28 + 4 * (5 * 8192 + 4 * 8192 * 8192 + 3 * 8 * 8192))) "$bi_tmp/big.bin"
$KV export --model tiny --gguf "$bi_tmp/f32.gguf" >/dev/null 2>&1
$KV export --model tiny --type q8_0 --gguf "$bi_tmp/q8.gguf" >/dev/null 2>&1
$KV export --model kjv-tiny --gguf "$bi_tmp/kjv.gguf" >/dev/null 2>&1
python3 tests/cli/bad_gguf.py "$bi_tmp/q8.gguf" "$bi_tmp/short.gguf" short "$bi_tmp/q8.gguf" "$bi_tmp/retype.gguf" retype \
    "$bi_tmp/q8.gguf" "$bi_tmp/offsets0.gguf" offsets0 "$bi_tmp/q8.gguf" "$bi_tmp/nan-scale.gguf" nan-scale \
    "$bi_tmp/f32.gguf" "$bi_tmp/nan-weight.gguf" nan-weight "$bi_tmp/kjv.gguf" "$bi_tmp/bos5000.gguf" bos=5000 \
    "$bi_tmp/kjv.gguf" "$bi_tmp/bosm1.gguf" bos=-1 "$bi_tmp/kjv.gguf" "$bi_tmp/bos5.gguf" bos=5
bi_full() { # the first line of stderr: the whole message
    timeout 10 "$@" >"$out" 2>"$err"; status=$?; lines=$(wc -l <"$err"); first=$(head -n 1 "$err")
}
while IFS='|' read -r want words cmd; do
    case $want in '' | \#*) continue ;; esac
    eval "set -- $cmd"
    bi_full "$@"
    case $first in "kvscope: "*"$words"*) words_ok=1 ;; *) words_ok=0 ;; esac
    if [ "$status" -eq "$want" ] && [ "$lines" -eq 1 ] && [ "$words_ok" -eq 1 ] && [ ! -s "$out" ]; then
        ok "bad input, exit $want at once: $cmd"
    else bad "bad input: $cmd" "want: exit $want within 10 s, one line holding '$words', nothing on stdout" \
        "got: exit $status (124: timed out), $lines lines" "stderr: $(head -c 300 "$err")"; fi
done <<'TABLE'
# 5. rates: the idle steps before the arrivals are bounded (1e-20 died of SIGFPE, 1e-7 grew without bound)
2|serve: 32 requests at a rate of 1e-20 a step arrive over about 3.2e+21 steps; a run waits at most 1000000|$KV serve --model tiny --rate 1e-20
2|a rate of 1e-300 a step|$KV serve --model tiny --rate 1e-300
2|a rate of 1e-07 a step arrive over about 3.2e+08 steps|$KV serve --model tiny --rate 1e-7
# 6. sizes checked before anything is drawn, read or loaded
2|a prompt of 2147483648 random ids (--prompt-len): model 'tiny' has max_seq_len 256|$KV run --model tiny --prompt-len 2147483648
2|a prompt of 4294967296 random ids (--prompt-len): model 'tiny' has max_seq_len 256|$KV view --headless --model tiny --prompt-len 4294967296
2|a prompt of 2147483648 random ids (--prompt-len): model 'tiny' has max_seq_len 256|$KV dump --model tiny --prompt-len 2147483648 --out $bi_tmp/d51
2|a prompt of 2147483648 random ids (--prompt-len): kvscope draws at most 16777216|$KV run --model tiny --cache shift --prompt-len 2147483648
2|src_len = 2147483648 is beyond kvscope's limits|$KV run --model encdec --src-len 2147483648
2|a prompt of 8 random ids (--prompt-len): model 'big.bin' has max_seq_len 1|$KV run --weights $bi_tmp/big.bin
2|cache 'paged' needs 38.15 TiB for 10000000 pages|$KV serve --model llama-3-8b --shared --cache paged:pages=10000000
# 7. beyond this machine's memory: exit 2, naming the cause (they were "out of memory", exit 1)
2|a prompt of 8589934592 random ids (--prompt-len)|$KV run --model tiny --prompt-len 8589934592
2|cache 'paged' needs|$KV serve --model tiny --slots 2147483648
2|for 2147483648 sequences' block tables and tokens|$KV serve --model tiny --slots 2147483648
2|serve: a token budget of 2147483648 needs|$KV serve --model tiny --token-budget 2147483648
# 9. GGUF files that lie, and NaN weights or scales
2|bytes of data after the last tensor belong to no tensor: the header's tensor count|$KV run --weights $bi_tmp/short.gguf --prompt-ids 1,2 --tokens 2
2|retype.gguf: tensor 'blk.0.attn_norm.weight' (data offset|$KV run --weights $bi_tmp/retype.gguf --prompt-ids 1,2 --tokens 2
2|) overlaps tensor 'token_embd.weight' (offset 0,|$KV run --weights $bi_tmp/retype.gguf --prompt-ids 1,2 --tokens 2
2|offsets0.gguf: tensor 'blk.0.attn_norm.weight' (data offset 0) overlaps tensor 'token_embd.weight'|$KV run --weights $bi_tmp/offsets0.gguf --prompt-ids 1,2 --tokens 2
2|nan-weight.gguf: tensor 'token_embd.weight' (f32): a weight in row 0 is NaN or infinite|$KV run --weights $bi_tmp/nan-weight.gguf --prompt-ids 1,2 --tokens 2
2|nan-scale.gguf: tensor 'token_embd.weight' (q8_0): a block's scale in row 0 is NaN or infinite|$KV eval --weights $bi_tmp/nan-scale.gguf --set tokenizer=bytes --text README.md --tokens 40
# 10. numbers as written, in range; ids inside the vocabulary
2|--temperature: '0x10' is not a decimal number|$KV run --model tiny --temperature 0x10
2|--rate: '-0X1p3' is not a decimal number|$KV serve --model tiny --rate -0X1p3
2|--lr: '1e-320' is too close to 0 (the smallest normal number is 2.22507e-308)|$KV train --model tiny --text README.md --valid README.md --out $bi_tmp/x.kvw --lr 1e-320
2|--weight-decay: 0 or more, got -0.1|$KV train --model tiny --text README.md --valid README.md --out $bi_tmp/x.kvw --weight-decay -0.1
2|metadata 'tokenizer.ggml.bos_token_id' is 5000, outside the|$KV tokenize --weights $bi_tmp/bos5000.gguf hi
2|metadata 'tokenizer.ggml.bos_token_id' is -1; it must not be negative|$KV run --weights $bi_tmp/bosm1.gguf --prompt-ids 1 --tokens 1
TABLE
[ ! -e "$bi_tmp/d51" ] && [ ! -e "$bi_tmp/x.kvw" ] && ok "refused runs leave no output" ||
    bad "refused runs leave no output" "$(ls -A "$bi_tmp")"
# 9. the files that tell the truth still run; --allow-nan runs a NaN one on
expect_ok "an honest q8_0 export runs" '^tokens \(sequence 0\)' $KV run --weights "$bi_tmp/q8.gguf" --prompt-ids 1,2 --tokens 2
expect_ok "--allow-nan runs a NaN weight on" '^tokens \(sequence 0\)' \
    $KV run --weights "$bi_tmp/nan-weight.gguf" --allow-nan --prompt-ids 1,2 --tokens 2
expect_ok "a bos_token_id inside the vocabulary is taken" '^ +0 ' $KV tokenize --weights "$bi_tmp/bos5.gguf" hi
# 10. a folder that is there keeps its mode; a new one follows the umask
mkdir "$bi_tmp/keep" && chmod 0751 "$bi_tmp/keep"
(umask 022 && $KV dump --model tiny --tokens 1 --out "$bi_tmp/keep" >/dev/null 2>&1 &&
    $KV dump --model tiny --tokens 1 --out "$bi_tmp/new" >/dev/null 2>&1)
modes="$(stat -c %a "$bi_tmp/keep" "$bi_tmp/new" 2>&1 | tr '\n' ' ')"
[ "$modes" = "751 755 " ] && [ -e "$bi_tmp/keep/manifest.json" ] && ok "dump --out: a folder there keeps mode 751, a new one is 755 under umask 022" ||
    bad "dump --out: the folder's mode" "want: 751 755" "got: $modes"
# 10. a name from --set or an .ini reaches stdout escaped, as errors are
run "a name with an escape byte" $KV run --model tiny --set "name=${esc}[31mred" --prompt-ids 1 --tokens 1
if [ "$status" -eq 0 ] && grep -q 'tiny\|\\x1b\[31mred' "$out" && ! grep -q "$esc" "$out"; then ok "names reach stdout escaped"
else bad "names reach stdout escaped" "want: \\x1b[31mred, no ESC byte" "got: exit $status" "stdout: $(head -c 200 "$out" | od -c | head -3)"; fi

rm -rf "$bi_tmp"
