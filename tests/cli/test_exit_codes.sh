# test_exit_codes.sh: one exit status per kind of failure, in every command.
# 2: the user's input is wrong (a bad flag, value or spec string, an unknown
# name); 1: the input is fine but the work failed (a file that cannot be read
# or written, a cache that overflows during the run, gnuplot failing).
# Each failure is one line "kvscope: ..." on stderr and nothing on stdout.

ec_tmp=$(mktemp -d)
: >"$ec_tmp/f" # a file, where a directory is wanted

# --- 2: usage errors ----------------------------------------------------------
expect_fail "exit 2: unknown command" 2 "unknown command 'nocommand'" $KV nocommand
expect_fail "exit 2: run, unknown flag" 2 "unknown or incomplete option '--bogus'" $KV run --bogus
expect_fail "exit 2: run, bad value" 2 "--tokens: 'abc' is not a whole number" $KV run --tokens abc
expect_fail "exit 2: run, bad cache spec" 2 "unknown cache 'magic'" $KV run --cache magic
expect_fail "exit 2: run, unknown model" 2 "unknown model 'nope'" $KV run --model nope
expect_fail "exit 2: plot, unknown figure" 2 "unknown figure 'nofig'" $KV plot nofig
expect_fail "exit 2: dump, --out missing" 2 "--out DIR is required" $KV dump
expect_fail "exit 2: calc, bad --elem" 2 "--elem: 'q3' is not one of" $KV calc --elem q3
expect_fail "exit 2: eval, bad cache spec" 2 "unknown cache 'magic'" $KV eval --text README.md --cache magic
expect_fail "exit 2: tokenize, unknown tokenizer" 2 "tokenizer 'nope' is not one kvscope knows" \
    $KV tokenize --tokenizer nope hello
expect_fail "exit 2: train, unknown flag" 2 "unknown or incomplete option '--bogus'" $KV train --bogus
expect_fail "exit 2: lesson, unknown subcommand" 2 "unknown lesson command '999'" $KV lesson 999
expect_fail "exit 2: view, no terminal" 2 'needs a terminal' $KV view
expect_fail "exit 2: export, unknown --type" 2 "export: --type 'int4'" $KV export --gguf "$ec_tmp/x.gguf" --type int4

# --- 1: runtime failures -------------------------------------------------------
expect_fail "exit 1: run, a model file that cannot be read" 1 "model file './nonexistent.ini' cannot be read" \
    $KV run --model ./nonexistent.ini
expect_fail "exit 1: run, cache overflow (before any output)" 1 \
    "cache overflow: cache 'contiguous:max=4' holds 4 rows per sequence" $KV run --cache contiguous:max=4
expect_fail "exit 1: run --format json, cache overflow" 1 "cache overflow" \
    $KV run --cache contiguous:max=4 --format json
expect_fail "exit 1: run --quality, cache overflow (before any output)" 1 "cache overflow" \
    $KV run --quality --cache contiguous:max=4
expect_fail "exit 1: beam search, cache overflow (before any output)" 1 \
    "cache overflow: cache 'contiguous:max=4' holds 4 rows per sequence; the run needs 5" \
    $KV run --model encdec --tokens 5 --cache contiguous:max=4
expect_fail "exit 1: eval, cache overflow" 1 "cache overflow" $KV eval --text README.md --tokens 64 --cache contiguous:max=4
expect_fail "exit 1: run, a weights file that cannot be read" 1 'cannot open' \
    $KV run --weights "$ec_tmp/missing.gguf"
expect_fail "exit 1: plot, --out cannot be created" 1 "--out $ec_tmp/f/x: cannot create" \
    $KV plot projection --out "$ec_tmp/f/x"
expect_fail "exit 1: dump, --out cannot be created" 1 "--out $ec_tmp/f/d" $KV dump --out "$ec_tmp/f/d"
expect_fail "exit 1: eval, a text that cannot be read" 1 "cannot read '$ec_tmp/none.txt'" \
    $KV eval --text "$ec_tmp/none.txt"
expect_fail "exit 1: tokenize, a merges file that cannot be read" 1 "cannot read merges file" \
    $KV tokenize --tokenizer "$ec_tmp/none.txt" hello
expect_fail "exit 1: train, a text that cannot be read" 1 "cannot read '$ec_tmp/none.txt'" \
    $KV train --model tiny --text "$ec_tmp/none.txt" --valid "$ec_tmp/none.txt" --out "$ec_tmp/x.kvw"
expect_fail "exit 1: lesson check, an exercise file that cannot be read" 1 "cannot read '$ec_tmp/none.c'" \
    $KV lesson check 7 --file "$ec_tmp/none.c"
expect_fail "exit 1: export, a folder that does not exist" 1 'cannot create' \
    $KV export --model tiny --gguf "$ec_tmp/no/such/x.gguf"

# gnuplot failing: a stand-in gnuplot that exits 3. plot reports its progress
# on stdout, so only the status and the last stderr line are checked.
mkdir -p "$ec_tmp/bin"
printf '#!/bin/sh\necho broken >&2\nexit 3\n' >"$ec_tmp/bin/gnuplot"
chmod +x "$ec_tmp/bin/gnuplot"
run "exit 1: plot, gnuplot fails" env PATH="$ec_tmp/bin:$PATH" $KV plot memory --out "$ec_tmp/plots" --term png
if [ "$status" -eq 1 ] && tail -n 1 "$err" | grep -q '^kvscope: plot: gnuplot failed on memory.gp'; then
    ok "exit 1: plot, gnuplot fails"
else bad "exit 1: plot, gnuplot fails" "want: exit 1, 'kvscope: plot: gnuplot failed ...'" \
    "got: exit $status" "stderr: $(head -c 300 "$err")"; fi

rm -rf "$ec_tmp"
